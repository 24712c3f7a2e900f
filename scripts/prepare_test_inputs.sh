#!/usr/bin/env bash
# Prepare the optional inputs of the test suite that can be made on this machine
# (README.md, "Run the tests"): a vllm-project/recipes checkout at 8959cf6, where
# tests/support/recipes_support.py full_checkout() looks for it.
#
#   scripts/prepare_test_inputs.sh
#
# The checkout goes to $PROVENANCE_RECIPES_ROOT, else /tmp/recipes-8959cf6. It is cloned
# from $PROVENANCE_RECIPES_GIT, else the bare mirror beside the checkout
# (../.mirror/vllm-project+recipes/repo) when there is one, else from GitHub (network).
# An existing checkout at that commit is left as it is. The shared corpus and the
# InferenceX mirror cannot be made here: the README's table says where the tests look.
set -euo pipefail
cd "$(dirname "$0")/.."

rev="${PROVENANCE_RECIPES_REV:-8959cf6}"
dest="${PROVENANCE_RECIPES_ROOT:-/tmp/recipes-${rev}}"
mirror="../.mirror/vllm-project+recipes/repo"
if [ -n "${PROVENANCE_RECIPES_GIT:-}" ]; then
  source="$PROVENANCE_RECIPES_GIT"
elif [ -d "$mirror" ]; then
  source="$(cd "$mirror" && pwd)"
else
  source="https://github.com/vllm-project/recipes.git"
fi

if [ -f "$dest/taxonomy.yaml" ] && [ -d "$dest/models" ]; then
  if [ ! -e "$dest/.git" ]; then
    echo "recipes root: ${dest} (already there, not a git checkout: left as it is)"
    exit 0
  fi
  have="$(git -C "$dest" rev-parse HEAD)"
  want="$(git -C "$dest" rev-parse --verify -q "${rev}^{commit}" || true)"
  if [ "$have" = "$want" ]; then
    echo "recipes checkout at ${rev}: ${dest} (already there)"
    exit 0
  fi
  echo "error: ${dest} is a checkout of ${have:0:12}, not ${rev}; move it away" >&2
  exit 1
fi

tmp="$(mktemp -d "${dest}.partial.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --no-checkout "$source" "$tmp"
git -C "$tmp" checkout --quiet --detach "$rev"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "recipes checkout at ${rev}: ${dest} (from ${source})"
