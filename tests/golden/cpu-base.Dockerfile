# Builder base of the CPU platform: the distribution, its default compiler and
# GROMACS' build dependencies. Stable and dev GROMACS images both start here.
# clang-16 (with its OpenMP runtime and lld) is the distribution clang that toolchains
# may drive: a dev compiler that forwards to it, or the package toolchain.
FROM gmxbench-base/debian:bookworm
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build libfftw3-dev ccache python3 ca-certificates curl git \
      clang-16 libomp-16-dev lld-16 \
 && rm -rf /var/lib/apt/lists/*
