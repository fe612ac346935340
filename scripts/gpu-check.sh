#!/bin/bash
# The checks only a machine with a GPU can make, on trine as already built (scripts/test.sh or
# cmake): the cuda backend on the real driver (libcuda.so.1) and the Vulkan backend on the GPU's
# own driver, each through the differential suite, async and batches against the reference; the
# cuda tests under compute-sanitizer memcheck and racecheck where it is installed; then
# `trine-bench --quick --calibrate` on every device. Each step's log goes to the output folder,
# and a summary of exit codes ends the run; the script exits 1 if any step failed.
#
#   scripts/gpu-check.sh [build dir (build/rel)] [output dir (gpu-check-out)]
#   TRINE_GPU_VULKAN=vulkan:1 scripts/gpu-check.sh ...   # the Vulkan device to test (vulkan:0)
#   TRINE_GPU_CHECK_TIMEOUT=600 ...                     # seconds per step (300)
set -u
build=${1:-build/rel}
out=${2:-gpu-check-out}
vk=${TRINE_GPU_VULKAN:-vulkan:0}
limit=${TRINE_GPU_CHECK_TIMEOUT:-300}
tests=$build/tests/trine_tests
bench=$build/trine-bench
for f in "$tests" "$bench"; do
  [[ -x $f ]] || { echo "gpu-check: $f not found: build trine first (scripts/test.sh, or cmake --build $build)" >&2; exit 2; }
done
mkdir -p "$out"
unset TRINE_CUDA_EMULATOR  # the real driver, never the emulator
export TRINE_TEST_ERROR_LOG=$out/errors.tsv
summary=()
failed=0

# step NAME COMMAND...: runs it with its output in $out/NAME.log, prints Catch's totals.
step() {
  local name=$1
  shift
  echo "== $name ($(date +%T))"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  grep -E '^(All tests passed|test cases:|assertions:)|ERROR SUMMARY|RACECHECK SUMMARY' "$out/$name.log"
  [[ $rc == 124 ]] && echo "   stopped after ${limit} s"
  summary+=("$(printf '%-28s exit %s' "$name" "$rc")")
  [[ $rc == 0 ]] || failed=1
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "gpu-check: no nvidia-smi"
"$build/trine-info" 2>&1 | grep -E '^ *(cpu|vulkan|cuda)' | head -8

step cuda "$tests" "[cuda]"
for suite in ops async batch; do step "${suite}_cuda_0" env TRINE_TEST_DEVICE=cuda:0 "$tests" "[$suite]"; done
step vulkan env TRINE_VULKAN_VALIDATION=1 "$tests" "[vulkan]"
for suite in ops async batch; do
  step "${suite}_${vk/:/_}" env TRINE_VULKAN_VALIDATION=1 TRINE_TEST_DEVICE="$vk" "$tests" "[$suite]"
done
if command -v compute-sanitizer >/dev/null; then
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 99 "$tests" "[cuda]"
  step racecheck compute-sanitizer --tool racecheck --error-exitcode 99 "$tests" "[cuda]"
else
  echo "== compute-sanitizer not on PATH: memcheck and racecheck not run"
fi
step trine_bench env XDG_CACHE_HOME="$out/cache" "$bench" --quick --calibrate --no-plots --out "$out/trine-bench"
tail -12 "$out/trine_bench.log"

echo "== summary (logs in $out)"
printf '%s\n' "${summary[@]}"
exit $failed
