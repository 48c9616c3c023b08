# Kernel benchmark `bandwidth` of stable-rocm7.12, compiled by the build's own compiler
# and flags (hip):
#   /opt/rocm/core-7.12/bin/amdclang++
FROM gromacs:stable-rocm7.12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/gmxbench/kernels
COPY bandwidth_common.h bandwidth_gpu.cu ./
RUN mkdir -p bin \
 && /opt/rocm/core-7.12/bin/amdclang++ -x hip --rocm-path=/opt/rocm/core-7.12 --offload-arch=gfx1201 --rocm-device-lib-path=/opt/rocm/core-7.12/lib/llvm/amdgcn/bitcode -O3 -o bin/bandwidth bandwidth_gpu.cu --hip-link \
 && /opt/rocm/core-7.12/bin/amdclang++ -x hip --rocm-path=/opt/rocm/core-7.12 --offload-arch=gfx1201 --rocm-device-lib-path=/opt/rocm/core-7.12/lib/llvm/amdgcn/bitcode -O3 -DNONTEMPORAL=1 -o bin/bandwidth-nt bandwidth_gpu.cu --hip-link
WORKDIR /run
