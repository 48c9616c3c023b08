# Kernel benchmark `tune` of stable-cpu-gcc12: Kernel Tuner, which compiles every configuration
# with the build's own compiler at run time:
#   c++
# Kernel Tuner and its imports are wheels the host downloaded with pinned hashes; they
# are checked again here and unpacked (no pip, no network).
FROM gromacs:stable-cpu-gcc12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/gmxbench/wheels
COPY SHA256SUMS *.whl ./
RUN sha256sum -c SHA256SUMS \
 && for wheel in *.whl; do python3 -m zipfile -e "$wheel" /opt/gmxbench/python; done \
 && rm -rf /opt/gmxbench/wheels \
 && PYTHONPATH=/opt/gmxbench/python python3 -c "import kernel_tuner, numpy"
WORKDIR /opt/gmxbench/kernels
COPY tune.py tune_cpu.c tune_gpu.cu ./
ENV PYTHONPATH=/opt/gmxbench/python
WORKDIR /run
