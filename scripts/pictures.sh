#!/usr/bin/env bash
# Regenerates docs/pictures/: runs every `hypercomm draw` command that docs/algorithms.md
# lists under "Pictures" (the list is `PICTURES` in crates/hypercomm-cli/src/algorithms.rs;
# README.md shows the same commands), from the repository's root.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p hypercomm-cli
mkdir -p docs/pictures
export PATH="$PWD/target/debug:$PATH"
hypercomm algorithms --format markdown | grep '^hypercomm draw ' | while read -r line; do
    echo "$line" >&2
    sh -c "$line" >/dev/null
done
