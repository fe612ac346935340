#!/usr/bin/env bash
# The one place that installs the system packages trine's build, tests and benchmarks need.
# Idempotent: asks apt only for what is missing. Later issues add lines to PACKAGES, nowhere else.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config
  # cpu_simd backend
  libxsimd-dev
  # tests and benchmarks
  catch2 libbenchmark-dev
  # the GPU comparison's driver (benches/gpu_compare/gpu_compare.py; its ctest runs it without PyTorch)
  python3
  # examples/make_decode_gguf.py: the decode_gguf tests' model and numpy reference (no gguf package)
  python3-numpy
  # the PTX parser fuzzer (scripts/fuzz.sh): libFuzzer comes with clang
  clang
  # Vulkan backend (lavapipe is the CPU driver CI runs it on)
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  # comparison libraries for benches/compare
  libopenblas-dev libeigen3-dev libdnnl-dev
  # the dispatcher's calibration profile (JSON, header-only, private to the library)
  nlohmann-json3-dev
  # trine-bench: command line, tables, plots
  libcli11-dev libfmt-dev gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
