# Kernel benchmark `bandwidth` of stable-rocm-debian-clang21, compiled by the build's own compiler
# and flags (hip):
#   /usr/lib/llvm-21/bin/clang++
FROM gromacs:stable-rocm-debian-clang21
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/gmxbench/kernels
COPY bandwidth_common.h bandwidth_gpu.cu ./
RUN mkdir -p bin \
 && /usr/lib/llvm-21/bin/clang++ -x hip --rocm-path=/usr --offload-arch=gfx1201 --rocm-device-lib-path=/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode -O3 -o bin/bandwidth bandwidth_gpu.cu -lamdhip64 \
 && /usr/lib/llvm-21/bin/clang++ -x hip --rocm-path=/usr --offload-arch=gfx1201 --rocm-device-lib-path=/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode -O3 -DNONTEMPORAL=1 -o bin/bandwidth-nt bandwidth_gpu.cu -lamdhip64
WORKDIR /run
