# GROMACS stable, ROCm platform (amd stack): the reference baseline for
# gfx1201, built with the stack's own HIP compiler and left untouched between
# LLVM iterations:
#   /opt/rocm/core-7.12/bin/amdclang++
FROM gmxbench-builder:rocm-example AS source
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
RUN git clone --quiet --filter=blob:none --no-checkout -- https://gitlab.com/gromacs/gromacs.git gromacs \
 && git -C gromacs checkout --quiet 7f24a2dbf3000000000000000000000000000000 \
 && tar -C /src --sort=name --mtime=@1704067200 --owner=0 --group=0 --numeric-owner \
        --exclude=.git -czf gromacs.tar.gz gromacs \
 && rm -rf gromacs
RUN sha256sum gromacs.tar.gz | cut -d' ' -f1 > gromacs.tar.gz.sha256

FROM gmxbench-builder:rocm-example
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=source /src/gromacs.tar.gz /src/gromacs.tar.gz.sha256 /src/
ENV SOURCE_DATE_EPOCH=1704067200
ARG GMXBENCH_NO_COMPILE_CACHE=
RUN --mount=type=cache,id=gmxbench-ccache-rocm-bbbbbbbbbbbb-6a99bbcbbbcc,target=/ccache \
    mkdir -p /src/gromacs /opt/gmxbench \
 && tar -C /src/gromacs --strip-components=1 -xzf /src/gromacs.tar.gz \
 && export CCACHE_DIR=/ccache CCACHE_COMPILERCHECK=content CCACHE_STATSLOG=/tmp/ccache-stats.log \
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then export CCACHE_DISABLE=1; fi \
 && cmake -S /src/gromacs -B /build/gromacs \
      -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DGMX_GPU=HIP \
      -DCMAKE_HIP_COMPILER=/opt/rocm/core-7.12/bin/amdclang++ \
      -DCMAKE_HIP_COMPILER_ROCM_ROOT=/opt/rocm/core-7.12 \
      -DGMX_HIP_TARGET_ARCH=gfx1201 \
      -DCMAKE_PREFIX_PATH=/opt/rocm/core-7.12 \
      '-DCMAKE_C_FLAGS=-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build' \
      '-DCMAKE_CXX_FLAGS=-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build' \
      -DGMX_MPI=OFF \
      -DGMX_OPENMP=ON \
      -DGMX_BUILD_OWN_FFTW=OFF \
      -DCMAKE_INSTALL_PREFIX=/opt/gromacs/stable-rocm7.12 \
      -DGMX_DOUBLE=OFF \
      -DGMX_SIMD=AVX2_256 \
      -DGMX_USE_RDTSCP=ON \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_HIP_COMPILER_LAUNCHER=ccache \
 && { ninja -C /build/gromacs -j"$(nproc)" install \
      || { ccache --show-log-stats -v 2>/dev/null; exit 1; }; } \
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then echo disabled; \
    else ccache --show-log-stats -v 2>/dev/null || true; fi | tee /opt/gmxbench/compile-cache.txt \
 && find /build/gromacs -name '*.o' | sort | while read -r object; do \
      if /opt/rocm/core-7.12/lib/llvm/bin/llvm-objdump -h "$object" | grep '[.]hip_fatbin' > /dev/null; then \
        kept="/opt/gmxbench/codeobjects/${object#/build/gromacs/}"; \
        mkdir -p "${kept%/*}" && cp "$object" "$kept" \
        && /opt/rocm/core-7.12/lib/llvm/bin/llvm-objdump --offloading "$kept" > /dev/null \
        && rm -f "$kept" "$kept".*host-*; \
      fi; \
    done \
 && sed '/^GMX_BUILD_HOSTNAME:/d' /build/gromacs/CMakeCache.txt > /opt/gromacs/stable-rocm7.12/CMakeCache.txt \
 && rm -rf /build/gromacs /src/gromacs
ENV PATH=/opt/gromacs/stable-rocm7.12/bin:$PATH \
    GMXBENCH_BUILD=stable-rocm7.12 \
    GMXBENCH_PREFIX=/opt/gromacs/stable-rocm7.12
WORKDIR /run
