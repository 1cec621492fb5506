#!/usr/bin/env bash
# The Action's install step: puts codex-parity on PATH ($GITHUB_PATH) and writes its version
# to $GITHUB_OUTPUT. VERSION (the `version` input): empty for this action's own version (the
# `version` of Cargo.toml beside it) from PyPI, a version, a path to a wheel, or `source`
# (cargo install from this action's checkout). A venv in $RUNNER_TEMP keeps pip away from
# the runner's system Python.
set -euo pipefail

action=${GITHUB_ACTION_PATH:?run this as a step of the codex-parity action}
temp=${RUNNER_TEMP:?}
version=${VERSION:-}

if [ "$version" = source ]; then
  if ! command -v cargo >/dev/null; then
    echo "::error::version: source needs cargo on the runner (a Rust toolchain)"
    exit 2
  fi
  cargo install --locked --path "$action/driver" --root "$temp/codex-parity"
  bindir="$temp/codex-parity/bin"
else
  python=$(command -v python3 || command -v python || true)
  if [ -z "$python" ]; then
    echo "::error::codex-parity's wheel needs Python 3.9+ on the runner (actions/setup-python)"
    exit 2
  fi
  "$python" -m venv "$temp/codex-parity-venv"
  pip="$temp/codex-parity-venv/bin/pip"
  case "$version" in
    "") spec="codex-parity==$("$action/release/version.sh")" ;;
    *.whl) spec=$version ;;
    *) spec="codex-parity==$version" ;;
  esac
  "$pip" install --quiet --disable-pip-version-check "$spec"
  bindir="$temp/codex-parity-venv/bin"
fi

# Only codex-parity goes on PATH, not the venv's python and pip.
onpath="$temp/codex-parity-bin"
mkdir -p "$onpath"
ln -sf "$bindir/codex-parity" "$onpath/codex-parity"
installed=$("$onpath/codex-parity" --version)
echo "installed $installed ($bindir/codex-parity)"
echo "$onpath" >> "$GITHUB_PATH"
echo "version=${installed#codex-parity }" >> "$GITHUB_OUTPUT"
