#!/usr/bin/env bash
# Sets up and passes the tests on a fresh machine (README's test command; .ci/run runs exactly this):
#   1. system packages (scripts/install-deps.sh)
#   2. release build, every ctest suite (every op x every CPU ISA against the reference, errors,
#      numerics, tools), install, and a consumer project built against the installed package
#      through find_package and through pkg-config
#   3. the same tests once more under AddressSanitizer + UndefinedBehaviorSanitizer
# --quick skips step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1

step() { printf '\n==== %s (%s)\n' "$*" "$(date +%H:%M:%S)"; }

step "install dependencies"
scripts/install-deps.sh

jobs=$(nproc)
root=$PWD/build

step "release build"
cmake -S . -B "$root/release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$root/install" >/dev/null
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

if [[ $quick == 1 ]]; then
  echo "quick run: sanitizer build skipped"
  exit 0
fi

step "AddressSanitizer + UndefinedBehaviorSanitizer build"
cmake -S . -B "$root/asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRINE_SANITIZE=address,undefined >/dev/null
cmake --build "$root/asan" -j "$jobs"

step "sanitizer tests"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$root/asan" --output-on-failure -j "$jobs"
