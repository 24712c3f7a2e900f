"""flags package."""
