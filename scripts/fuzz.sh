#!/usr/bin/env bash
# Builds the fuzzers (tests/fuzz: clang, libFuzzer, ASan + UBSan) and runs them for a bounded
# time:  scripts/fuzz.sh [SECONDS]   (default 60: two thirds to the PTX parser, one third to the
# model-file parsers, GGUF and safetensors).
# Exits non-zero on any finding (crash, sanitizer report, an exception other than the parser's
# documented errors, hang, memory blow-up) and prints the path of the input that caused it. The
# PTX seeds are tests/fuzz/seeds plus the PTX of every shipped kernel config for sm_80 and sm_75,
# printed now by trine-ptx ($TRINE_PTX, default build/release/trine-ptx, built there when missing);
# the model files' are tests/io's files. build/fuzz/corpus and build/fuzz/model-corpus keep what
# earlier runs learned; delete them to start over. FUZZ_SEED=N fixes libFuzzer's seed
# (the test command uses 1, so CI explores the same inputs every run; 0, the default, is random).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2; }
root=$PWD/build
out=$root/fuzz
jobs=$(nproc)

trine_ptx=${TRINE_PTX:-$root/release/trine-ptx}
if [[ ! -x $trine_ptx && -z ${TRINE_PTX:-} ]]; then
  echo "fuzz: building trine-ptx for the seed corpus"
  cmake -S . -B "$root/release" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/release" -j "$jobs" --target trine-ptx
fi
[[ -x $trine_ptx ]] || { echo "fuzz: no trine-ptx at $trine_ptx" >&2; exit 2; }

cmake -S tests/fuzz -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$out/build" -j "$jobs"
fuzzer=$out/build/ptx_parser_fuzz

# Generated seeds are rebuilt every run (never committed): they follow the kernels as they change.
rm -rf "$out/seeds"
mkdir -p "$out/seeds" "$out/corpus"
"$trine_ptx" --list | awk '/^[^ ]/ { family = $1 } /^  configs:/ { for (i = 2; i <= NF; i++) print family, $i }' |
  while read -r family config; do
    for target in sm_80 sm_75; do
      "$trine_ptx" "$family" "$config" "$target" >"$out/seeds/$family.$config.$target.ptx"
    done
  done
seeds=$(find "$out/seeds" -name '*.ptx' | wc -l)
[[ $seeds -gt 0 ]] || { echo "fuzz: trine-ptx --list gave no kernel configs" >&2; exit 2; }
echo "fuzz: PTX parser, $seeds generated seeds + $(find tests/fuzz/seeds -name '*.ptx' | wc -l) hand-written"

# -timeout: one input taking 10 s is a hang (the largest seed decodes in milliseconds).
# run_fuzzer NAME LOG SECONDS FUZZER ARGS...: runs it, and on a finding prints the log's end and
# each input that caused one, then exits 1.
run_fuzzer() {
  local name=$1 log=$2 secs=$3 bin=$4
  shift 4
  local status=0
  rm -rf "$out/artifacts" && mkdir -p "$out/artifacts"
  "$bin" "$@" -seed="${FUZZ_SEED:-0}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/" >"$log" 2>&1 || status=$?
  local findings
  findings=$(find "$out/artifacts" -type f | sort)
  if [[ $status -ne 0 || -n $findings ]]; then
    tail -n 60 "$log"
    echo "FAILED: the $name fuzzer stopped with status $status (full log: $log)"
    for f in $findings; do
      echo "finding: $f"
      echo "  reproduce: $bin $f"
    done
    exit 1
  fi
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
}

ptx_seconds=$((seconds * 2 / 3))
model_seconds=$((seconds - ptx_seconds))
run_fuzzer "PTX parser" "$out/fuzz.log" "$ptx_seconds" "$fuzzer" "$out/corpus" "$out/seeds" tests/fuzz/seeds \
  -dict=tests/fuzz/ptx.dict
echo "fuzz: PTX parser, no findings in ${ptx_seconds}s (corpus: $(find "$out/corpus" -type f | wc -l) inputs)"
mkdir -p "$out/model-corpus"
echo "fuzz: model files, $(find tests/io -type f | wc -l) seeds (tests/io), ${model_seconds}s"
run_fuzzer "model-file parser" "$out/model-fuzz.log" "$model_seconds" "$out/build/model_file_fuzz" \
  "$out/model-corpus" tests/io -dict=tests/fuzz/model_file.dict
echo "fuzz: model files, no findings in ${model_seconds}s (corpus: $(find "$out/model-corpus" -type f | wc -l) inputs)"
