# LLVM toolchain at d7fead0f00000000000000000000000000000000: clang + lld for AMDGPU;X86,
# Release, in /opt/llvm-d7fead0f. Stages: source, configure, build, install (`--target`).
FROM gmxbench-builder:rocm-example AS source
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# rsync keeps unchanged files' mtimes in the cached tree; lld links LLVM in seconds.
RUN apt-get update \
 && apt-get install -y --no-install-recommends rsync lld \
 && rm -rf /var/lib/apt/lists/*
# Only the one commit is fetched: servers such as GitHub serve a reachable commit by its
# full id.
RUN git init --quiet /src/llvm-project \
 && git -C /src/llvm-project fetch --quiet --depth 1 https://github.com/llvm/llvm-project.git d7fead0f00000000000000000000000000000000 \
 && git -C /src/llvm-project checkout --quiet FETCH_HEAD \
 && rm -rf /src/llvm-project/.git

FROM source AS configure
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Fails fast on a bad option or a source tree CMake rejects, without building anything.
RUN --mount=type=cache,id=gmxbench-llvm-ccache,target=/ccache \
    --mount=type=cache,id=gmxbench-llvm-build-rocm-e7dc226b42b2,target=/llvm,sharing=locked \
    mkdir -p /llvm/src /llvm/build \
 && rsync -rlpc --delete /src/llvm-project/ /llvm/src/ \
 && cmake -S /llvm/src/llvm -B /llvm/build \
      -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/opt/llvm-d7fead0f \
      '-DLLVM_ENABLE_PROJECTS=clang;lld' \
      '-DLLVM_TARGETS_TO_BUILD=AMDGPU;X86' \
      -DLLVM_USE_LINKER=lld \
      -DLLVM_CCACHE_BUILD=ON \
      -DLLVM_CCACHE_DIR=/ccache \
      -DLLVM_CCACHE_MAXSIZE=20G \
      -DLLVM_APPEND_VC_REV=ON \
      -DLLVM_FORCE_VC_REVISION=d7fead0f00000000000000000000000000000000 \
      -DLLVM_INCLUDE_TESTS=OFF \
      -DLLVM_INCLUDE_EXAMPLES=OFF \
      -DLLVM_INCLUDE_BENCHMARKS=OFF

FROM configure AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Configures again (a no-op on an unchanged tree), so a pruned cache only costs time.
RUN --mount=type=cache,id=gmxbench-llvm-ccache,target=/ccache \
    --mount=type=cache,id=gmxbench-llvm-build-rocm-e7dc226b42b2,target=/llvm,sharing=locked \
    mkdir -p /llvm/src /llvm/build \
 && rsync -rlpc --delete /src/llvm-project/ /llvm/src/ \
 && cmake -S /llvm/src/llvm -B /llvm/build \
      -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/opt/llvm-d7fead0f \
      '-DLLVM_ENABLE_PROJECTS=clang;lld' \
      '-DLLVM_TARGETS_TO_BUILD=AMDGPU;X86' \
      -DLLVM_USE_LINKER=lld \
      -DLLVM_CCACHE_BUILD=ON \
      -DLLVM_CCACHE_DIR=/ccache \
      -DLLVM_CCACHE_MAXSIZE=20G \
      -DLLVM_APPEND_VC_REV=ON \
      -DLLVM_FORCE_VC_REVISION=d7fead0f00000000000000000000000000000000 \
      -DLLVM_INCLUDE_TESTS=OFF \
      -DLLVM_INCLUDE_EXAMPLES=OFF \
      -DLLVM_INCLUDE_BENCHMARKS=OFF \
 && ninja -C /llvm/build -j"$(nproc)" install \
 && { /opt/llvm-d7fead0f/bin/clang --version | grep -F d7fead0f00000000000000000000000000000000 \
      || { echo "clang --version does not name d7fead0f00000000000000000000000000000000" >&2; exit 1; }; }

FROM gmxbench-builder:rocm-example AS install
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=build /opt/llvm-d7fead0f /opt/llvm-d7fead0f
RUN /opt/llvm-d7fead0f/bin/clang++ --version \
 && /opt/llvm-d7fead0f/bin/ld.lld --version
