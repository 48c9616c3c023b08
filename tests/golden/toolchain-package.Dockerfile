# Toolchain image from a distribution compiler package: the builder base plus
# clang-16 libomp-16-dev. Dev GROMACS images are built FROM this image.
FROM gmxbench-builder:cpu-example
RUN apt-get update \
 && apt-get install -y --no-install-recommends clang-16 libomp-16-dev \
 && rm -rf /var/lib/apt/lists/* \
 && clang++-16 --version
