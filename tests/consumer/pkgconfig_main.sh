#!/usr/bin/env bash
# Builds the consumer through pkg-config instead of CMake: the trine.pc file is proven too.
set -euo pipefail
prefix="$1"; out="$2"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
g++ $(pkg-config --cflags trine) "$(dirname "$0")/main.cpp" -o "$out" $(pkg-config --libs trine) -Wl,-rpath,"$prefix/lib"
"$out"
