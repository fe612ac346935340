#!/usr/bin/env bash
# Sets up and passes the tests on a fresh machine (README's test command; .ci/run runs exactly this):
#   1. system packages (scripts/install-deps.sh)
#   2. release build, every ctest suite (every op x every CPU ISA against the reference, errors,
#      numerics, tools), install, and a consumer project built against the installed package
#      through find_package and through pkg-config
#   3. the installed trine-info run with no LD_LIBRARY_PATH, from the install prefix and from a
#      second prefix (installed tools find libtrine through their relative RPATH)
#   4. the fuzzers (scripts/fuzz.sh: clang, libFuzzer, ASan + UBSan): the PTX parser's, seeded with
#      every shipped kernel's PTX, then the model files' (GGUF, safetensors): 45 s in all beside the
#      ASan build of step 5 (30 s alone with --quick)
#   5. the same tests once more (but ptx_ptxas, ops_fresh_seed and the tour) under AddressSanitizer +
#      UndefinedBehaviorSanitizer, the per-ISA runs of the differential suite with one element-wise
#      op per cpu loop ([shared_cpu_path]; ops_1thread keeps every op)
#   6. a ThreadSanitizer build (cpu kernels for SSE4.2 only) running the thread pool, async and
#      batch suites, and the differential suite with 2 threads (one element-wise op per cpu loop:
#      [shared_cpu_path])
# --quick skips steps 5 and 6. Each step prints its start time and how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1

step_start=$SECONDS
step_name=""
# Closes the previous step with its duration, then opens the next one.
step() {
  [[ -n $step_name ]] && printf '==== %s took %ds\n' "$step_name" $((SECONDS - step_start))
  step_name="$*"
  step_start=$SECONDS
  printf '\n==== %s (%s)\n' "$*" "$(date +%H:%M:%S)"
}
fuzz_pid=""  # the fuzzer's, while it runs in the background (below)
trap '[[ -n $fuzz_pid ]] && { pkill -P "$fuzz_pid"; kill "$fuzz_pid"; } 2>/dev/null
      [[ -n $step_name ]] && printf "==== %s took %ds\n" "$step_name" $((SECONDS - step_start))' EXIT

step "install dependencies"
scripts/install-deps.sh

jobs=$(nproc)
root=$PWD/build

step "release build"
cmake -S . -B "$root/release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$root/install" \
  -DTRINE_TEST_DEVICES="vulkan:0" >/dev/null
cmake --build "$root/release" -j "$jobs"

step "release tests"
ctest --test-dir "$root/release" --output-on-failure -j "$jobs"

step "install and build a consumer against the installed package"
rm -rf "$root/install" "$root/consumer"
cmake --install "$root/release" >/dev/null
cmake -S tests/consumer -B "$root/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$root/install" >/dev/null
cmake --build "$root/consumer"
LD_LIBRARY_PATH="$root/install/lib" "$root/consumer/consumer"
tests/consumer/pkgconfig_main.sh "$root/install" "$root/consumer/consumer_pkgconfig"

step "installed tools run from their prefix with no LD_LIBRARY_PATH"
rm -rf "$root/relocated"
cmake --install "$root/release" --prefix "$root/relocated" >/dev/null
# Each installed executable, from both prefixes: it finds libtrine through its relative RPATH, and
# libtrine finds the emulator's library installed beside it (TRINE_CUDA_EMULATOR=1).
installed_runs() {  # prefix: each command and the pattern its output must show
  local p=$1
  printf '%s\n' "cpu +available|$p/bin/trine-info" \
    "cuda +available +trine PTX emulator|env TRINE_CUDA_EMULATOR=1 $p/bin/trine-info" \
    "configs: relu|$p/bin/trine-ptx --list" \
    "--quick|$p/bin/trine-bench --help"
}
for prefix in "$root/install" "$root/relocated"; do
  while IFS='|' read -r pattern cmd; do
    if ! out=$(env -u LD_LIBRARY_PATH $cmd 2>&1) || ! grep -Eq -- "$pattern" <<<"$out"; then
      printf '%s\n' "$out"
      echo "FAILED: '$cmd' does not run from its install prefix (RPATH?) or lacks '$pattern'"
      exit 1
    fi
    echo "ok: $cmd"
  done < <(installed_runs "$prefix")
done

if [[ $quick == 1 ]]; then
  step "fuzzers (PTX parser, model files): build and a 30 s run"
  TRINE_PTX="$root/release/trine-ptx" FUZZ_SEED=1 scripts/fuzz.sh 30
  echo "quick run: sanitizer builds skipped"
  exit 0
fi

# The fuzzers run on one core: in the full run they go beside the ASan build, which has the other
# (and shares the first), instead of leaving a core idle for their run. They get 45 s there for
# about the 30 s of one core they have alone; their result is printed, and fails the run, before
# the ASan tests.
echo "fuzzers (PTX parser, model files): building, then a 45 s run beside the ASan build (their output follows that build)"
TRINE_PTX="$root/release/trine-ptx" FUZZ_SEED=1 scripts/fuzz.sh 45 >"$root/fuzz-step.log" 2>&1 &
fuzz_pid=$!

# The sanitizer builds compile at -O1 with line tables only (-g1): what a report's stack needs, at
# about 60% of RelWithDebInfo's -O2 -g compile time, the largest part of a CI run.
san_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
# They build the cpu kernels only for the ISAs this CPU runs (TRINE_CPU_ISAS; the release build above
# has all three): the others' tests would skip here anyway. On a CPU without AVX-512 its kernels were
# a tenth of the ASan build.
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
host_isas="sse4_2"
has_flags() { local f; for f in "$@"; do [[ $cpu_flags == *" $f "* ]] || return 1; done; }
has_flags avx2 fma f16c && host_isas+=";avx2"
has_flags avx512f avx512cd avx512dq avx512bw avx512vl && host_isas+=";avx512"
san_flags+=("-DTRINE_CPU_ISAS=$host_isas")
echo "sanitizer builds: cpu kernels for $host_isas (this CPU's)"

step "AddressSanitizer + UndefinedBehaviorSanitizer build"
# Left out of UBSan: null (ASan reports the access itself, with its stack), alignment (x86 runs
# misaligned scalar access; the kernels load vectors unaligned on purpose) and pointer-overflow:
# the three checks instrumenting every access made the build a third slower.
cmake -S . -B "$root/asan" -G Ninja "${san_flags[@]}" -DTRINE_SANITIZE=address,undefined \
  -DTRINE_SANITIZE_SKIP=alignment,null,pointer-overflow >/dev/null
cmake --build "$root/asan" -j "$jobs"

step "fuzzers (run beside the ASan build): their result"
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
fuzz_pid=""
cat "$root/fuzz-step.log"
[[ $fuzz_status == 0 ]] || { echo "FAILED: a fuzzer (exit $fuzz_status)"; exit 1; }

step "sanitizer tests"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Mesa's lavapipe leaks a 128-byte block when a process opens it, which LeakSanitizer sees only
# after the Vulkan loader has unloaded the driver, as "<unknown module>", so no suppression can
# name it. Preloaded, the driver stays mapped and that block stays reachable: every suite keeps
# leak checking. The suites that compile Vulkan pipelines also meet LLVM's leaks inside lavapipe,
# from modules unloaded by exit: they run with address and UB checks but without leak checking.
lavapipe=$(ls /usr/lib/*/libvulkan_lvp.so 2>/dev/null | head -n 1 || true)
asan_env=(ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0")
[[ -n $lavapipe ]] && asan_env+=(LD_PRELOAD="$lavapipe")
# Not repeated under the sanitizers, since they would check nothing the release run and the other
# suites here do not: ptx_ptxas (its time is ptxas, another program: 38 s), ops_fresh_seed (the
# ops suite again on other data: 20 s) and the tour (the same calls as the ops suites: 45 s).
env "${asan_env[@]}" ctest --test-dir "$root/asan" --output-on-failure -j "$jobs" \
  -E '^(vulkan|dispatch|trine_bench|ptx_ptxas$|ops_fresh_seed$|tour$)'
echo "Vulkan, dispatch and trine-bench suites: leak checking off (lavapipe's LLVM leaks; see scripts/test.sh)"
env "${asan_env[@]/detect_leaks=1/detect_leaks=0}" ctest --test-dir "$root/asan" --output-on-failure -j "$jobs" -R '^(vulkan|dispatch|trine_bench)'

step "ThreadSanitizer build (tests only)"
# Its cpu kernels for SSE4.2 alone: what it checks is the split of each op between threads (the
# thread pool and the loops above the kernels, the same for every ISA), and a second ISA's kernels
# were 100 s of this build's compile on a Zen 3 for nothing it runs differently.
cmake -S . -B "$root/tsan" -G Ninja "${san_flags[@]}" -DTRINE_CPU_ISAS=sse4_2 -DTRINE_SANITIZE=thread \
  -DTRINE_BUILD_TOOLS=OFF >/dev/null
cmake --build "$root/tsan" -j "$jobs" --target trine_tests

step "ThreadSanitizer tests: [pool], [async], [batch], [memory]; the same and [cuda] (but its accuracy sweeps) on the emulator; [ops] (one op per cpu loop) with 2 threads"
# [ops] leaves out the element-wise ops whose cpu loop (and its split between threads) another op
# of their family runs ([shared_cpu_path], tests/ops_tests.cpp): 357 s of the 2-thread run on a
# Zen 3 went to every activation and binary op through two loops.
tsan_ops="[ops]~[shared_cpu_path]"
unset ASAN_OPTIONS UBSAN_OPTIONS
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
tsan_bin="$root/tsan/tests/trine_tests"
# Catch2 v2 exits 0 when a tag matches no test: count each tag's tests first, so a renamed tag
# fails here instead of passing with nothing run.
for tag in "[pool]" "[async]" "[batch]" "[memory]" "$tsan_ops" "[shared_cpu_path]" "[sweep]"; do
  listing=$("$tsan_bin" "$tag" --list-tests || true)  # --list-tests exits with the count
  count=$(sed -n 's/^\([0-9]*\) matching test cases*$/\1/p' <<<"$listing")
  [[ ${count:-0} == 0 ]] && { echo "FAILED: no $tag tests in $tsan_bin"; exit 1; }
  echo "$tag: $count test cases"
done
# The three runs go side by side, each into its own log, printed when it ends: most of their time
# is one thread, so one after another left a core idle (222 s in a row on a Zen 3).
tsan_pids=() tsan_names=()
tsan_start() {  # name, then the command (env assignments first); run i writes $root/tsan-i.log
  tsan_names+=("$1")
  shift
  env "$@" >"$root/tsan-${#tsan_pids[@]}.log" 2>&1 &
  tsan_pids+=($!)
}
tsan_start "[pool],[async],[batch],[memory]" "$tsan_bin" "[pool],[async],[batch],[memory]"
# The emulator's streams run on worker threads of their own: async and batches on the emulated
# cuda device, and the cuda suite but its accuracy sweeps ([sweep]: one thread computing millions
# of values, 103 s of this run's 277 on a Zen 3).
tsan_start "[async],[batch],[cuda]~[sweep] on the emulator" TRINE_CUDA_EMULATOR=1 TRINE_TEST_DEVICE=cuda:0 "$tsan_bin" "[async],[batch],[cuda]~[sweep]"
tsan_start "$tsan_ops with 2 threads" TRINE_NUM_THREADS=2 "$tsan_bin" "$tsan_ops"
tsan_failed=0
for i in "${!tsan_pids[@]}"; do
  status=0
  wait "${tsan_pids[$i]}" || status=$?
  echo "---- ThreadSanitizer: ${tsan_names[$i]}"
  cat "$root/tsan-$i.log"
  if [[ $status != 0 ]]; then
    echo "FAILED under ThreadSanitizer: ${tsan_names[$i]} (exit $status; a data race or deadlock report is above)"
    tsan_failed=1
  fi
done
[[ $tsan_failed == 0 ]]
