#!/usr/bin/env bash
# trine's cpu backend side by side with OpenBLAS, Eigen and oneDNN (benches/compare), 1 and 2
# threads, one markdown table per thread count on stdout (progress on stderr).
#
#   scripts/compare.sh [--quick] [--filter TEXT] [--rounds N]
#
# Builds build/compare (release, benches on, tests off), then:
#   1. picks OpenBLAS's fastest kernel on this machine: these machines set OPENBLAS_CORETYPE to a
#      slower one, so every candidate the CPU can run is timed (sgemm n=1024, 1 thread) and the
#      fastest is used; the table prints the kernel's name (openblas_get_corename);
#   2. runs the comparison once per thread count, every library given that many threads, with
#      idle threads kept from spinning into the next library's timing (OMP_WAIT_POLICY=passive,
#      OPENBLAS_THREAD_TIMEOUT=4; trine's pool polls 50 us and the harness sleeps 2 ms between
#      blocks).
# A full run takes a few minutes; --quick (fewer sizes and rounds) well under a minute. Nothing
# else should run on the machine meanwhile: the ratios are only as quiet as the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh >/dev/null
build=build/compare
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRINE_BUILD_BENCHES=ON -DTRINE_BUILD_TESTS=OFF \
  -DTRINE_BUILD_TOOLS=OFF -DTRINE_VULKAN=OFF -DTRINE_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target compare >&2
bin=$build/benches/compare

candidates=(Haswell Zen)
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
if grep -qw avx512bw <<<"$flags"; then candidates+=(SkylakeX); fi
if grep -qw avx512_bf16 <<<"$flags"; then candidates+=(Cooperlake); fi
if grep -qw amx_tile <<<"$flags"; then candidates+=(SapphireRapids); fi
best="" best_rate=0
for c in "${candidates[@]}"; do
  read -r name rate < <(OPENBLAS_CORETYPE=$c "$bin" --probe-openblas)
  echo "[compare] OpenBLAS OPENBLAS_CORETYPE=$c runs kernel $name: $rate GFLOP/s (sgemm n=1024, 1 thread)" >&2
  if awk -v a="$rate" -v b="$best_rate" 'BEGIN { exit !(a > b) }'; then best=$c best_rate=$rate; fi
done
echo "[compare] using OPENBLAS_CORETYPE=$best" >&2

for threads in 1 2; do
  OPENBLAS_CORETYPE=$best OPENBLAS_THREAD_TIMEOUT=4 OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$threads \
    TRINE_NUM_THREADS=$threads "$bin" "$@"
done
