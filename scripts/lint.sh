#!/usr/bin/env bash
# Lint (ruff check, ruff format --check) and the layer contract (import-linter, pyproject.toml).
# import-linter walks the installed package's folder, and ours maps top-level folders into it
# (pyproject's package-dir), so the contract is checked on a copy laid out as an install lays it out.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cp -r bugforge "$tree/bugforge"
for pkg in factory sandbox agent training images; do cp -r "$pkg" "$tree/bugforge/$pkg"; done
(cd "$tree" && PYTHONPATH="$tree" lint-imports "$OLDPWD/pyproject.toml")
