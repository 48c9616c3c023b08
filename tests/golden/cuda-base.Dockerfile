# Builder base of the CUDA platform from Debian's own CUDA packages: nvidia-cuda-toolkit
# 12.4 (non-free: nvcc, ptxas, cuobjdump for the codegen fingerprint, cuFFT)
# with g++-13 as nvcc's host compiler (the newest GCC that CUDA
# 12.4 accepts), and Debian's clang-21 as a stand-in CUDA compiler
# (NVPTX, then the toolkit's ptxas), as a dev build's clang is one. Builds without a GPU:
# nothing here needs the driver. NVIDIA's CUDA images can replace the base
# (ORCH_BASE_IMAGE) on a machine that reaches their registry.
FROM gmxbench-base/debian:sid
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The Release file of an unstable suite on a mirror can be past its Valid-Until; the
# base image records the Release date it was made from instead. The toolkit is in
# non-free, which needs contrib; the debootstrap base lists main only.
RUN if [ -f /etc/apt/sources.list.d/debian.sources ]; then \
      sed -i 's/^Components: main$/Components: main contrib non-free/' /etc/apt/sources.list.d/debian.sources; \
    fi \
 && if [ -f /etc/apt/sources.list ]; then \
      sed -i 's/ main$/ main contrib non-free/' /etc/apt/sources.list; \
    fi \
 && apt-get -o Acquire::Check-Valid-Until=false update \
 && apt-get -o Acquire::Check-Valid-Until=false install -y --no-install-recommends \
      build-essential cmake ninja-build git ccache python3 ca-certificates curl \
      gcc-13 g++-13 nvidia-cuda-toolkit \
      clang-21 llvm-21 lld-21 \
 && rm -rf /var/lib/apt/lists/*
# Debian's toolkit is in the FHS layout (nvcc, ptxas, cuobjdump in /usr/bin); /usr/lib/cuda
# holds what clang's --cuda-path needs beyond it (cuda.h, nvvm/libdevice).
# Fail here, not an hour into a GROMACS build, when Debian moved on.
RUN printf '%s\n' '__global__ void smoke(float *x) { x[threadIdx.x] = sinf(x[threadIdx.x]) + expf(x[threadIdx.x]); }' > /tmp/smoke.cu \
 && nvcc --version | grep -F "release 12.4," \
      || { echo "nvcc is not CUDA 12.4: set DEBIAN_CUDA in orchestrator/platforms/cuda/build.py to Debian's nvidia-cuda-toolkit" >&2; exit 1; } \
 && nvcc --list-gpu-code | grep -qx sm_90 \
      || { echo "nvcc cannot generate code for sm_90" >&2; exit 1; } \
 && command -v cuobjdump > /dev/null \
      || { echo "missing cuobjdump (nvidia-cuda-toolkit): the codegen fingerprint needs it" >&2; exit 1; } \
 && command -v ptxas > /dev/null \
      || { echo "missing ptxas (nvidia-cuda-toolkit): clang's CUDA path assembles PTX with it" >&2; exit 1; } \
 && nvcc -ccbin g++-13 -arch=sm_90 -c /tmp/smoke.cu -o /tmp/smoke-nvcc.o \
      || { echo "nvcc with g++-13 cannot compile CUDA for sm_90" >&2; exit 1; } \
 && /usr/lib/llvm-21/bin/clang++ -x cuda --cuda-path=/usr/lib/cuda --cuda-gpu-arch=sm_90 \
      -O3 -c /tmp/smoke.cu -o /tmp/smoke-clang.o \
      || { echo "clang-21 cannot compile CUDA for sm_90 against /usr/lib/cuda (CUDA 12.4)" >&2; exit 1; } \
 && cuobjdump -sass /tmp/smoke-clang.o | grep -q "code for sm_90" \
      || { echo "clang-21's object holds no sm_90 SASS" >&2; exit 1; } \
 && rm -f /tmp/smoke*
