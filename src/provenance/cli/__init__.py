"""The command line: click only. Each command parses options and calls one core function."""
