#!/bin/bash
# The checks only a machine with a GPU can make, on trine as already built, in one command sized for
# a short lease: the most valuable first, every step bounded by what is left of the deadline.
#   1. the GPU comparison (benches/gpu_compare): trine's cuda and Vulkan devices side by side with
#      PyTorch (cuBLAS, cuDNN, its kernels) where PyTorch is installed; its table in compare.md;
#   2. the cuda backend on the real driver (libcuda.so.1): [cuda], then the differential suite,
#      numerics, async, batches and the decode model on cuda:0, each against the reference;
#   3. the Vulkan backend on the GPU's own driver, the same suites under the validation layer;
#   4. `trine-bench --quick --calibrate` on every device;
#   5. the cuda tests under compute-sanitizer memcheck and racecheck, where it is installed.
# Each step's log goes to the output folder; a summary of exit codes ends the run; the script exits 1
# if any step failed (a step stopped by the deadline counts as failed and says so).
#
#   scripts/gpu-check.sh [build dir (build/rel)] [output dir (gpu-check-out)]
#   TRINE_GPU_VULKAN=vulkan:1 ...          # the Vulkan device to test (vulkan:0)
#   TRINE_GPU_CHECK_TIMEOUT=300 ...        # seconds at most per step (300)
#   TRINE_GPU_CHECK_DEADLINE=520 ...       # seconds for the whole run (none)
#   TRINE_GPU_CHECK_STEPS='cuda|vulkan' ... # only the steps whose names match this regex (a rerun)
#   TRINE_GPU_CHECK_CASES=add_f32_64M,...   # only these cases of the comparison (gpu-compare --list)
#
# The build dir may be a kit made by scripts/gpu-kit.sh (the binaries, libtrine and a Vulkan loader
# with the validation layer, for a GPU machine that has none): its vulkan-root is used when present.
set -u
build=${1:-build/rel}
out=${2:-gpu-check-out}
vk=${TRINE_GPU_VULKAN:-vulkan:0}
limit=${TRINE_GPU_CHECK_TIMEOUT:-300}
deadline=${TRINE_GPU_CHECK_DEADLINE:-0}
start=$SECONDS
tests=$build/tests/trine_tests
bench=$build/trine-bench
compare=$build/gpu-compare
here=$(cd "$(dirname "$0")/.." && pwd)
for f in "$tests" "$bench" "$compare"; do
  [[ -x $f ]] || { echo "gpu-check: $f not found: build trine first (scripts/test.sh, or cmake --build $build)" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
tests=$build/tests/trine_tests bench=$build/trine-bench compare=$build/gpu-compare
unset TRINE_CUDA_EMULATOR  # the real driver, never the emulator
export TRINE_TEST_ERROR_LOG=$out/errors.tsv
# libtrine beside the binaries (a kit's binaries carry their build machine's RUNPATH).
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# A Vulkan loader brought along (scripts/gpu-kit.sh): the loader and libglvnd (which NVIDIA's ICD
# needs for libGLX_nvidia.so.0), the validation layer, and the driver's ICD file wherever it is.
if [[ -d $build/vulkan-root ]]; then
  root=$build/vulkan-root
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/usr/lib/x86_64-linux-gnu
  export VK_ADD_LAYER_PATH=$root/usr/share/vulkan/explicit_layer.d
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
             /etc/vulkan/icd.d/nvidia_icd.json /usr/local/share/vulkan/icd.d/nvidia_icd.json; do
    if [[ -f $icd ]]; then export VK_DRIVER_FILES=$icd; break; fi
  done
  echo "gpu-check: Vulkan loader from $root; ICD ${VK_DRIVER_FILES:-(none of NVIDIA's found: the loader's own search)}"
fi
summary=()
failed=0

# The seconds a step may take: the per-step limit, or what is left of the deadline.
allowed() {
  local cap=${1:-$limit}
  (( cap > limit )) && cap=$limit
  if (( deadline > 0 )); then
    local left=$(( deadline - (SECONDS - start) ))
    (( left < cap )) && cap=$left
  fi
  echo "$cap"
}

# step NAME CAP COMMAND...: runs it with its output in $out/NAME.log, prints Catch's totals.
step() {
  local name=$1 secs
  if [[ -n ${TRINE_GPU_CHECK_STEPS:-} && ! $name =~ ^(${TRINE_GPU_CHECK_STEPS})$ ]]; then
    return
  fi
  secs=$(allowed "$2")
  shift 2
  if (( secs < 5 )); then
    echo "== $name: not run (deadline)"
    summary+=("$(printf '%-28s not run: deadline' "$name")")
    failed=1
    return
  fi
  echo "== $name ($(date +%T), at most ${secs} s)"
  local t0=$SECONDS
  timeout "$secs" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  grep -E '^(All tests passed|test cases:|assertions:)|ERROR SUMMARY|RACECHECK SUMMARY' "$out/$name.log"
  [[ $rc == 124 ]] && echo "   stopped after ${secs} s"
  summary+=("$(printf '%-28s exit %-4s %4d s' "$name" "$rc" $((SECONDS - t0)))")
  [[ $rc == 0 ]] || failed=1
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "gpu-check: no nvidia-smi"
"$build/trine-info" 2>&1 | grep -E '^ *(cpu|vulkan|cuda)' | head -8

# 1. The comparison: the speed lines of issues 33 and 35. Its table goes to compare.md.
py=$(command -v python3 || command -v python || true)
if [[ -n $py ]]; then
  # no new case after the step's time less a minute (a case's samples take seconds, not minutes)
  budget=$(( $(allowed 240) - 60 ))
  (( budget < 30 )) && budget=30
  step gpu_compare 240 "$py" "$here/benches/gpu_compare/gpu_compare.py" --bin "$compare" --devices "cuda:0,$vk" \
    --samples 5 --budget "$budget" --timeout 60 --json "$out/compare.json" ${TRINE_GPU_CHECK_CASES:+--cases "$TRINE_GPU_CHECK_CASES"}
  if [[ -f $out/gpu_compare.log ]]; then
    sed -n '/^GPU comparison/,$p' "$out/gpu_compare.log" | grep -v '^\[gpu-compare' >"$out/compare.md"
    grep -E '^\| (matmul_f16_8192|matmul_f32_4096|add_f32_64M|sync_relu_16) ' "$out/compare.md"
  fi
else
  echo "== gpu_compare: no python3 on PATH, not run"
fi

# 2. cuda on the real driver.
step cuda 90 "$tests" "[cuda]"
for suite in ops numerics async batch decode; do
  step "${suite}_cuda_0" 90 env TRINE_TEST_DEVICE=cuda:0 "$tests" "[$suite]"
done
# 3. Vulkan on the GPU's driver, under the validation layer.
step vulkan 90 env TRINE_VULKAN_VALIDATION=1 "$tests" "[vulkan]"
for suite in ops numerics async batch decode; do
  step "${suite}_${vk/:/_}" 90 env TRINE_VULKAN_VALIDATION=1 TRINE_TEST_DEVICE="$vk" "$tests" "[$suite]"
done
# 4. The main job.
step trine_bench 120 env XDG_CACHE_HOME="$out/cache" "$bench" --quick --calibrate --no-plots --out "$out/trine-bench"
[[ -f $out/trine_bench.log ]] && tail -12 "$out/trine_bench.log"
# 5. The sanitizers, with whatever time is left.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $sanitizer ]]; then
  step memcheck 120 "$sanitizer" --tool memcheck --error-exitcode 99 "$tests" "[cuda]"
  step racecheck 120 "$sanitizer" --tool racecheck --error-exitcode 99 "$tests" "[cuda]"
else
  echo "== compute-sanitizer not on PATH: memcheck and racecheck not run"
fi

echo "== summary (logs in $out, $((SECONDS - start)) s)"
printf '%s\n' "${summary[@]}"
exit $failed
