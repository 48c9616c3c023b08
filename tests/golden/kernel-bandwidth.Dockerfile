# Kernel benchmark `bandwidth` of stable-cpu-gcc12, compiled by the build's own compiler
# and flags (openmp):
#   c++
FROM gromacs:stable-cpu-gcc12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/gmxbench/kernels
COPY bandwidth_common.h bandwidth_cpu.cpp ./
RUN mkdir -p bin \
 && c++ -O3 -std=c++17 -fopenmp -mavx2 -mfma -o bin/bandwidth bandwidth_cpu.cpp \
 && c++ -O3 -std=c++17 -fopenmp -mavx2 -mfma -DNONTEMPORAL=1 -o bin/bandwidth-nt bandwidth_cpu.cpp
WORKDIR /run
