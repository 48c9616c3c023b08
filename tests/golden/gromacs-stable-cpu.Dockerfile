# GROMACS stable, CPU platform: the distribution's default compiler (c++).
FROM gmxbench-builder:cpu-example AS source
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
RUN if [ -f /etc/apt/sources.list.d/debian.sources ]; then \
      sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources; \
    fi \
 && if [ -f /etc/apt/sources.list ]; then \
      sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/deb-src.list; \
    fi \
 && apt-get update \
 && apt-get source --download-only gromacs \
 && mv gromacs_2022.5.orig.tar.* gromacs.tar.gz \
 && rm -rf /var/lib/apt/lists/* ./*.dsc ./*.debian.tar.*
RUN sha256sum gromacs.tar.gz | cut -d' ' -f1 > gromacs.tar.gz.sha256

FROM gmxbench-builder:cpu-example
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=source /src/gromacs.tar.gz /src/gromacs.tar.gz.sha256 /src/
ENV SOURCE_DATE_EPOCH=1704067200
ARG GMXBENCH_NO_COMPILE_CACHE=
RUN --mount=type=cache,id=gmxbench-ccache-cpu-bbbbbbbbbbbb-650cc6401a67,target=/ccache \
    mkdir -p /src/gromacs /opt/gmxbench \
 && tar -C /src/gromacs --strip-components=1 -xzf /src/gromacs.tar.gz \
 && export CCACHE_DIR=/ccache CCACHE_COMPILERCHECK=content CCACHE_STATSLOG=/tmp/ccache-stats.log \
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then export CCACHE_DISABLE=1; fi \
 && cmake -S /src/gromacs -B /build/gromacs \
      -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=cc \
      -DCMAKE_CXX_COMPILER=c++ \
      -DGMX_GPU=OFF \
      '-DCMAKE_C_FLAGS=-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build' \
      '-DCMAKE_CXX_FLAGS=-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build' \
      -DGMX_MPI=OFF \
      -DGMX_OPENMP=ON \
      -DGMX_BUILD_OWN_FFTW=OFF \
      -DCMAKE_INSTALL_PREFIX=/opt/gromacs/stable-cpu-gcc12 \
      -DGMX_DOUBLE=OFF \
      -DGMX_SIMD=AVX2_256 \
      -DGMX_USE_RDTSCP=ON \
      -DBUILD_TESTING=OFF \
      -DGMXAPI=OFF \
      -DGMX_INSTALL_NBLIB_API=OFF \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
 && { ninja -C /build/gromacs -j"$(nproc)" install \
      || { ccache --show-log-stats -v 2>/dev/null; exit 1; }; } \
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then echo disabled; \
    else ccache --show-log-stats -v 2>/dev/null || true; fi | tee /opt/gmxbench/compile-cache.txt \
 && sed '/^GMX_BUILD_HOSTNAME:/d' /build/gromacs/CMakeCache.txt > /opt/gromacs/stable-cpu-gcc12/CMakeCache.txt \
 && rm -rf /build/gromacs /src/gromacs
ENV PATH=/opt/gromacs/stable-cpu-gcc12/bin:$PATH \
    GMXBENCH_BUILD=stable-cpu-gcc12 \
    GMXBENCH_PREFIX=/opt/gromacs/stable-cpu-gcc12
WORKDIR /run
