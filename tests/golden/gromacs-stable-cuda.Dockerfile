# GROMACS stable, CUDA platform: the reference baseline for sm_90, built with the
# toolkit's nvcc (host code by g++-13) and left untouched between LLVM iterations.
FROM gmxbench-builder:cuda-example AS source
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
RUN curl -fsSL -o gromacs.tar.gz https://ftp.gromacs.org/gromacs/gromacs-2026.3.tar.gz
RUN echo "1094b7bbc6a3960223827114626657110b40096cdf9598a727935fc84ebf8aa0  gromacs.tar.gz" | sha256sum -c -
RUN sha256sum gromacs.tar.gz | cut -d' ' -f1 > gromacs.tar.gz.sha256

FROM gmxbench-builder:cuda-example
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=source /src/gromacs.tar.gz /src/gromacs.tar.gz.sha256 /src/
ENV SOURCE_DATE_EPOCH=1704067200
ARG GMXBENCH_NO_COMPILE_CACHE=
RUN --mount=type=cache,id=gmxbench-ccache-cuda-bbbbbbbbbbbb-ed7cee944b48,target=/ccache \
    mkdir -p /src/gromacs /opt/gmxbench \
 && tar -C /src/gromacs --strip-components=1 -xzf /src/gromacs.tar.gz \
 && export CCACHE_DIR=/ccache CCACHE_COMPILERCHECK=content CCACHE_STATSLOG=/tmp/ccache-stats.log \
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then export CCACHE_DISABLE=1; fi \
 && cmake -S /src/gromacs -B /build/gromacs \
      -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=gcc-13 \
      -DCMAKE_CXX_COMPILER=g++-13 \
      -DGMX_GPU=CUDA \
      -DCMAKE_CUDA_COMPILER=/usr/bin/nvcc \
      -DCMAKE_CUDA_FLAGS=-Xcompiler=-ffile-prefix-map=/src/gromacs=.,-ffile-prefix-map=/build/gromacs=build \
      -DCMAKE_CUDA_ARCHITECTURES=90 \
      '-DCMAKE_C_FLAGS=-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build' \
      '-DCMAKE_CXX_FLAGS=-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build' \
      -DGMX_MPI=OFF \
      -DGMX_OPENMP=ON \
      -DGMX_BUILD_OWN_FFTW=OFF \
      -DCMAKE_INSTALL_PREFIX=/opt/gromacs/stable-nvcc12.4 \
      -DGMX_DOUBLE=OFF \
      -DGMX_SIMD=AVX2_256 \
      -DGMX_USE_RDTSCP=ON \
      -DGMX_FFT_LIBRARY=fftpack \
      -DGMX_HWLOC=OFF \
      -DBUILD_TESTING=OFF \
      -DGMXAPI=OFF \
      -DGMX_INSTALL_NBLIB_API=OFF \
      -DGMX_USE_COLVARS=NONE \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
 && { ninja -C /build/gromacs -j"$(nproc)" install \
      || { ccache --show-log-stats -v 2>/dev/null; exit 1; }; } \
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then echo disabled; \
    else ccache --show-log-stats -v 2>/dev/null || true; fi | tee /opt/gmxbench/compile-cache.txt \
 && find /build/gromacs -name '*.o' | sort | while read -r object; do \
      if objdump -h "$object" | grep '[.]nv_fatbin' > /dev/null; then \
        kept="/opt/gmxbench/codeobjects/${object#/build/gromacs/}"; \
        mkdir -p "${kept%/*}" && cp "$object" "$kept"; \
      fi; \
    done \
 && sed '/^GMX_BUILD_HOSTNAME:/d' /build/gromacs/CMakeCache.txt > /opt/gromacs/stable-nvcc12.4/CMakeCache.txt \
 && rm -rf /build/gromacs /src/gromacs
ENV PATH=/opt/gromacs/stable-nvcc12.4/bin:$PATH \
    GMXBENCH_BUILD=stable-nvcc12.4 \
    GMXBENCH_PREFIX=/opt/gromacs/stable-nvcc12.4
WORKDIR /run
