#!/usr/bin/env bash
# Compile the DEVICE side (gfx1201) of GROMACS 2026.3 src/gromacs/ewald/pme_solve_hip.cpp
# from its preprocessed device source, the way gmxbench's ROCm stable build compiles it,
# and write the code object to the current directory as
#   pme_solve_hip.cpp.o.0.hipv4-amdgcn-amd-amdhsa--gfx1201
#
# Usage:  CLANG=/path/to/clang++ /path/to/unit/compile.sh
#   CLANG        clang++ driver to use (default: clang++ on PATH). Its lld (ld.lld/lld)
#                must be next to it or on PATH: the driver links the code object with it.
#   EXTRA_FLAGS  extra driver flags appended at the end (optional), e.g. "-v" or
#                "-save-temps" or "--no-offload-new-driver".
#
# Needs no HIP headers and no ROCm: the .hipi is already preprocessed (HIP headers,
# rocPRIM, GROMACS headers included), and the device libraries come from ./bitcode.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CLANG=${CLANG:-clang++}
EXTRA_FLAGS=${EXTRA_FLAGS:-}
OUT=pme_solve_hip.cpp.o.0.hipv4-amdgcn-amd-amdhsa--gfx1201
SRC=pme_solve_hip-hip-amdgcn-amd-amdhsa-gfx1201.hipi

if [ -f "$HERE/$SRC" ]; then
  IN="$HERE/$SRC"
elif [ -f "$HERE/$SRC.xz" ]; then
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  xz -dc "$HERE/$SRC.xz" > "$TMP/$SRC"
  IN="$TMP/$SRC"
else
  echo "compile.sh: $SRC(.xz) not found in $HERE" >&2
  exit 1
fi

# -x hip -nogpuinc: compile the .hipi as HIP source without adding any HIP include path or
#   the implicit "-include __clang_hip_runtime_wrapper.h" (both already expanded in the
#   .hipi). "-x hip-cpp-output" is NOT usable here: the driver then treats the file as an
#   offload bundle, unbundles it, finds no device part and emits an empty code object.
# -cuid=cb58e4fd99c4ba29: the compilation-unit id the stable build's driver derived
#   (a hash of its command line as ccache ran it); it only names the __hip_cuid_*
#   marker variable, and fixing it makes the output byte-identical to the stable object.
# The remaining flags are the device-relevant part of the original command, verbatim:
#   CMAKE_HIP_FLAGS (gmxbench's hipcc-equivalent flags) + -O3 -std=c++17 from CMake.
#   --rocm-path points at this folder (nothing is read from it with -nogpuinc);
#   --rocm-device-lib-path at ./bitcode (the original: /usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode).
set -x
"$CLANG" -x hip -nogpuinc --cuda-device-only --no-gpu-bundle-output \
  --offload-arch=gfx1201 \
  -c "$IN" -o "$OUT" \
  --rocm-path="$HERE" \
  -fPIC -fno-gpu-rdc -ffast-math -munsafe-fp-atomics -fdenormal-fp-math=ieee \
  -fcuda-flush-denormals-to-zero -fno-slp-vectorize \
  -Wno-unused-command-line-argument -Wno-pass-failed \
  --rocm-device-lib-path="$HERE/bitcode" \
  -ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build \
  -O3 -std=c++17 \
  -cuid=cb58e4fd99c4ba29 \
  $EXTRA_FLAGS
