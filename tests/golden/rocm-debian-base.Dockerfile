# Builder base of the ROCm platform from Debian's own ROCm packages: hipcc over Debian's
# clang-21 (AMDGPU backend), HIP, rocPRIM/hipCUB, rocFFT/hipFFT, the device
# libraries, and llvm-21's tools (llvm-objdump, llvm-readelf) for the codegen
# fingerprint. No profiler: rocprofv3 comes only with AMD's images. HIP lives in the
# FHS layout (ROCM_PATH=/usr), found by CMake without a ROCm root.
FROM gmxbench-base/debian:sid
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The Release file of an unstable suite on a mirror can be past its Valid-Until; the
# base image records the Release date it was made from instead.
RUN apt-get -o Acquire::Check-Valid-Until=false update \
 && apt-get -o Acquire::Check-Valid-Until=false install -y --no-install-recommends \
      build-essential cmake ninja-build git ccache python3 libfftw3-dev ca-certificates curl \
      hipcc libamdhip64-dev librocprim-dev libhipcub-dev librocfft-dev libhipfft-dev \
      rocm-cmake rocminfo clang-21 llvm-21 lld-21 \
 && rm -rf /var/lib/apt/lists/*
ENV ROCM_PATH=/usr \
    HIP_PATH=/usr
# Fail here, not a quarter of an hour into a GROMACS build, when Debian moved on.
RUN hipcc --version | grep -F "InstalledDir: /usr/lib/llvm-21/bin" \
      || { echo "hipcc does not drive clang-21: set DEBIAN_LLVM in orchestrator/platforms/rocm.py to the clang Debian's hipcc uses" >&2; exit 1; } \
 && /usr/lib/llvm-21/bin/llc --version | grep -q amdgcn \
      || { echo "clang-21 has no AMDGPU backend" >&2; exit 1; } \
 && test -f /usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode/ocml.bc \
      || { echo "missing the device libraries in /usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode (rocm-device-libs-21)" >&2; exit 1; } \
 && test -n "$(find /usr/lib -path '*cmake/hip-lang/hip-lang-config.cmake' -print -quit)" \
      || { echo "missing hip-lang-config.cmake (libamdhip64-dev): CMake's HIP language needs it" >&2; exit 1; } \
 && test -n "$(find /usr/lib /usr/share -name 'rocprim-config.cmake' -print -quit)" \
      || { echo "missing rocPRIM's CMake config (librocprim-dev)" >&2; exit 1; } \
 && test -x /usr/lib/llvm-21/bin/llvm-objdump \
      || { echo "missing llvm-objdump (llvm-21): the codegen fingerprint needs it" >&2; exit 1; }
