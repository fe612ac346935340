#!/usr/bin/env bash
# Sets up and runs the main job on a fresh machine: trine-info, then every op of the table on
# every available backend at a typical size (examples/tour).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)"
build/release/tour "$@"
