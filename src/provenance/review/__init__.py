"""Reviewing a pull request: diff-aware audit, the CI gate and PR-body citations."""
