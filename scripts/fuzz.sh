#!/usr/bin/env bash
# Builds the PTX parser fuzzer (tests/fuzz: clang, libFuzzer, ASan + UBSan) and runs it for a
# bounded time:  scripts/fuzz.sh [SECONDS]   (default 60)
# Exits non-zero on any finding (crash, sanitizer report, non-PtxError exception, hang, memory
# blow-up) and prints the path of the input that caused it. The seeds are tests/fuzz/seeds plus
# the PTX of every shipped kernel config for sm_80 and sm_75, printed now by trine-ptx
# ($TRINE_PTX, default build/release/trine-ptx, built there when missing). build/fuzz/corpus
# keeps what earlier runs learned; delete it to start over. FUZZ_SEED=N fixes libFuzzer's seed
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
rm -rf "$out/seeds" "$out/artifacts"
mkdir -p "$out/seeds" "$out/corpus" "$out/artifacts"
"$trine_ptx" --list | awk '/^[^ ]/ { family = $1 } /^  configs:/ { for (i = 2; i <= NF; i++) print family, $i }' |
  while read -r family config; do
    for target in sm_80 sm_75; do
      "$trine_ptx" "$family" "$config" "$target" >"$out/seeds/$family.$config.$target.ptx"
    done
  done
seeds=$(find "$out/seeds" -name '*.ptx' | wc -l)
[[ $seeds -gt 0 ]] || { echo "fuzz: trine-ptx --list gave no kernel configs" >&2; exit 2; }
echo "fuzz: $seeds generated seeds + $(find tests/fuzz/seeds -name '*.ptx' | wc -l) hand-written, ${seconds}s"

# -timeout: one input taking 10 s is a hang (the largest seed decodes in milliseconds).
status=0
"$fuzzer" "$out/corpus" "$out/seeds" tests/fuzz/seeds -dict=tests/fuzz/ptx.dict \
  -seed="${FUZZ_SEED:-0}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/artifacts/" >"$out/fuzz.log" 2>&1 || status=$?

findings=$(find "$out/artifacts" -type f | sort)
if [[ $status -ne 0 || -n $findings ]]; then
  tail -n 60 "$out/fuzz.log"
  echo "FAILED: the PTX parser fuzzer stopped with status $status (full log: $out/fuzz.log)"
  for f in $findings; do
    echo "finding: $f"
    echo "  reproduce: $fuzzer $f"
  done
  exit 1
fi
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$out/fuzz.log" || true
echo "fuzz: no findings in ${seconds}s (corpus: $(find "$out/corpus" -type f | wc -l) inputs)"
