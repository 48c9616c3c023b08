# A user's own kernel (saxpy.hip) on stable-rocm-debian-clang21, compiled by the build's own compiler
# and flags (hip) against gmxbench_kernel.h, which times it:
#   /usr/lib/llvm-21/bin/clang++
# Every line the compiler prints is marked `compiler| ` in the build log: a failed compile
# is reported with the compiler's own words, attributed to the recipe.
FROM gromacs:stable-rocm-debian-clang21
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/gmxbench/kernels
COPY include/ include/
COPY src/ ./
RUN mkdir -p bin \
 && { /usr/lib/llvm-21/bin/clang++ -x hip --rocm-path=/usr --offload-arch=gfx1201 --rocm-device-lib-path=/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode -O3 -Iinclude -o bin/kernel saxpy.hip -lamdhip64 2>&1 | sed 's/^/compiler| /'; }
# The device code objects of every target, for the codegen fingerprint (not under
# /opt/gmxbench/codeobjects, which a GROMACS parent's fingerprint reads).
RUN mkdir -p codeobjects \
 && cp bin/kernel codeobjects/saxpy.hip.o \
 && /usr/lib/llvm-21/bin/llvm-objdump --offloading codeobjects/saxpy.hip.o > /dev/null \
 && rm -f codeobjects/saxpy.hip.o codeobjects/*host-* \
 && ls codeobjects | grep -q amdgcn
WORKDIR /run
