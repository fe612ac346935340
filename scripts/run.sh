#!/usr/bin/env bash
# Sets up and runs the main job on a fresh machine: trine-bench --quick on every device this
# machine has (here: cpu_simd, Vulkan on lavapipe and cuda_ptx on the PTX emulator, both software),
# which times every op of the table on each device, automatically placed, async and batched, and
# writes the table, CSV, JSON, a plot per op and a page under ./trine-bench-out (or --out DIR).
# Extra arguments go to trine-bench (--ops, --devices, --calibrate, ...; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# Only what the main job runs (trine-bench builds the PTX emulator's library with it), not every
# test program: about a third of a full build.
cmake --build build/release -j "$(nproc)" --target trine-info trine-bench
build/release/trine-info
TRINE_CUDA_EMULATOR=1 build/release/trine-bench --quick "$@"
