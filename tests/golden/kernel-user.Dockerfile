# A user's own kernel (saxpy.cpp) on stable-cpu-gcc12, compiled by the build's own compiler
# and flags (openmp) against gmxbench_kernel.h, which times it:
#   c++
# Every line the compiler prints is marked `compiler| ` in the build log: a failed compile
# is reported with the compiler's own words, attributed to the recipe.
FROM gromacs:stable-cpu-gcc12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/gmxbench/kernels
COPY include/ include/
COPY src/ ./
RUN mkdir -p bin \
 && { c++ -O3 -std=c++17 -fopenmp -mavx2 -mfma -Iinclude -o bin/kernel saxpy.cpp 2>&1 | sed 's/^/compiler| /'; }
WORKDIR /run
