"""Everything that talks to GitHub (PyGithub): client, sweep runs, pull-request checks."""
