"""evidence inferencex package."""
