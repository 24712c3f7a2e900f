"""One seam per outside system: git (:mod:`.git`) and the GitHub API (:mod:`.github`)."""
