#!/bin/bash
# Packs what scripts/gpu-check.sh needs on a GPU machine that has no build tools' output and no Vulkan
# loader (the lent H100/H200 machines: CUDA, cmake and PyTorch, no libvulkan): the test binary,
# trine-bench, trine-info, gpu-compare and libtrine from a Release build, plus Debian's Vulkan loader,
# libglvnd (NVIDIA's ICD needs libGLX) and the validation layer, unpacked. A few tens of MB.
#
#   scripts/gpu-kit.sh [build dir (build/release)] [kit dir (build/gpu-kit)]
#   then, on the GPU machine:  scripts/gpu-check.sh build/gpu-kit OUT
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
kit=${2:-build/gpu-kit}
[[ -f $build/CMakeCache.txt ]] || { echo "gpu-kit: $build is not a configured build (cmake -S . -B $build ...)" >&2; exit 2; }
grep -q '^CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" || echo "gpu-kit: warning: $build is not a Release build" >&2
cmake --build "$build" --target trine_tests trine-bench trine-info gpu-compare >&2
rm -rf "$kit"
mkdir -p "$kit/tests" "$kit/debs"
cp "$build/tests/trine_tests" "$kit/tests/"
cp "$build/trine-bench" "$build/trine-info" "$build/gpu-compare" "$kit/"
cp -P "$build"/libtrine.so* "$kit/"
# The loader and its companions, as the Debian packages this machine's release ships.
(cd "$kit/debs" && apt-get download libvulkan1 libglvnd0 libgl1 libglx0 libegl1 vulkan-validationlayers >&2)
for deb in "$kit"/debs/*.deb; do dpkg -x "$deb" "$kit/vulkan-root"; done
rm -rf "$kit/debs" "$kit/vulkan-root/usr/share/doc"
du -sh "$kit"
