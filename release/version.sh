#!/usr/bin/env bash
# Prints the workspace version: `version` of [workspace.package] in the Cargo.toml beside
# this folder (the wheel's, the npm packages' and the release tag's version).
set -euo pipefail
awk '/^\[/ { ws = ($0 == "[workspace.package]") }
     ws && /^version *=/ { gsub(/[" ]/, ""); sub(/^version=/, ""); print; exit }' \
  "$(dirname "$0")/../Cargo.toml"
