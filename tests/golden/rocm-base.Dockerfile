# Builder base of the ROCm platform: ROCm 7.12 as AMD's TheRock ships it, below
# /opt/rocm/core-7.12 (no link AMD's post-install makes is relied on), GROMACS' HIP build
# dependencies and AMD's profilers (rocprofv3, rocprof-compute, rocprof-sys). Stable and dev
# GROMACS images and LLVM toolchains all start here. Package names, paths and the
# repository line are TheRock 7.12's (orchestrator/platforms/therock.py; docs/platforms.md).
FROM ubuntu:24.04
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Build tools. libfftw3-dev is the CPU FFT (GMX_BUILD_OWN_FFTW=OFF); python3 runs
# rocprofv3. CMake's HIP language with a custom clang needs cmake >= 3.28 (Ubuntu 24.04's).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build git ccache python3 libfftw3-dev ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && if ! dpkg --compare-versions "$(cmake --version | sed -n 's/^cmake version //p')" ge 3.28; then \
      echo "cmake >= 3.28 is needed for HIP with a custom clang, found: $(cmake --version | head -n1)" >&2; \
      exit 1; \
    fi
# ROCm from AMD's apt repository (ORCH_ROCM_APT__URL, __KEY_URL, __SUITE, __COMPONENT), for
# GPU families gfx120X-all. The key is kept as apt reads it: armored (.asc) or
# binary (.gpg); the repository alone is read first, so a bad one fails in seconds. A base
# that already has ROCm in /opt/rocm/core-7.12 keeps it (checked below).
RUN if [ -e /opt/rocm/core-7.12/.info/version ]; then \
      echo "ROCm already in /opt/rocm/core-7.12 of ubuntu:24.04: nothing installed"; \
    else \
      install -d -m 0755 /etc/apt/keyrings \
      && { curl -fsSL --retry 3 https://repo.amd.com/rocm/packages/gpg/rocm.gpg -o /tmp/rocm-repo.key \
           || { echo "Could not download the key of AMD's ROCm repository from https://repo.amd.com/rocm/packages/gpg/rocm.gpg: check ORCH_ROCM_APT__KEY_URL (a mirror serves its own key)." >&2; exit 1; }; } \
      && if grep -q -- "-----BEGIN PGP PUBLIC KEY BLOCK-----" /tmp/rocm-repo.key; then key=/etc/apt/keyrings/rocm.asc; else key=/etc/apt/keyrings/rocm.gpg; fi \
      && install -m 0644 /tmp/rocm-repo.key "$key" && rm /tmp/rocm-repo.key \
      && echo "deb [arch=amd64 signed-by=$key] https://repo.amd.com/rocm/packages/ubuntu2404 stable main" > /etc/apt/sources.list.d/rocm.list \
      && { apt-get update -o Dir::Etc::SourceList=/etc/apt/sources.list.d/rocm.list -o Dir::Etc::SourceParts=- \
           || { echo "apt could not read a signed index of AMD's ROCm repository (https://repo.amd.com/rocm/packages/ubuntu2404 stable main) with the key from https://repo.amd.com/rocm/packages/gpg/rocm.gpg: the repository is unreachable, unsigned, or signed by another key. Check ORCH_ROCM_APT__URL, __SUITE, __COMPONENT and __KEY_URL; apt's own words are above." >&2; exit 1; }; } \
      && apt-get update \
      && { apt-get install -y --no-install-recommends \
             amdrocm-llvm-dev7.12 amdrocm-runtime-dev7.12 amdrocm-profiler-base7.12 amdrocm-profiler7.12 amdrocm-fft-dev7.12-gfx120x amdrocm-ccl-dev7.12-gfx120x 2>&1 | tee /tmp/rocm-install.log \
           || { if grep -q "trying to overwrite" /tmp/rocm-install.log; then echo "ROCm 7.12's packages of GPU families gfx120X-all install the same files below /opt/rocm/core-7.12 (dpkg's words are above), so one image holds one family's ROCm libraries: build one image per family (ORCH_GPU_ARCH with the targets of one family)." >&2; exit 1; fi; \
                echo "apt could not install ROCm 7.12's packages amdrocm-llvm-dev7.12, amdrocm-runtime-dev7.12, amdrocm-profiler-base7.12, amdrocm-profiler7.12, amdrocm-fft-dev7.12-gfx120x, amdrocm-ccl-dev7.12-gfx120x from https://repo.amd.com/rocm/packages/ubuntu2404: the repository (or a mirror of it) does not serve them all; apt's own words are above. Mirror those packages, or point ORCH_ROCM_APT__URL at a repository that has them." >&2; exit 1; }; } \
      && rm -rf /var/lib/apt/lists/* /tmp/rocm-install.log; \
    fi
# The installed release must be the pinned one: another is refused, never relabelled.
RUN if [ ! -f /opt/rocm/core-7.12/.info/version ]; then \
      echo "No ROCm release in /opt/rocm/core-7.12: /opt/rocm/core-7.12/.info/version is missing, so what is installed there cannot be told from ROCm 7.12. Use a base without ROCm (ROCm 7.12 is then installed) or one with ROCm 7.12 in /opt/rocm/core-7.12." >&2; \
      exit 1; \
    fi; \
    found="$(head -n 1 /opt/rocm/core-7.12/.info/version)"; \
    case "$found" in \
      7.12|7.12.*|7.12-*) echo "ROCm $found in /opt/rocm/core-7.12";; \
      *) echo "/opt/rocm/core-7.12/.info/version says ROCm $found, but this build pins ROCm 7.12: the base or the repository holds another release. Use a base without ROCm, a repository that serves 7.12, or pin that release with ORCH_ROCM_VERSION." >&2; exit 1;; \
    esac
ENV ROCM_PATH=/opt/rocm/core-7.12 \
    HIP_PATH=/opt/rocm/core-7.12 \
    PATH=/opt/rocm/core-7.12/bin:$PATH \
    LD_LIBRARY_PATH=/opt/rocm/core-7.12/lib
# Fail here, not an hour into a GROMACS build, when something the recipes use is missing:
# one paragraph naming each missing file and the package that ships it.
RUN missing=""; \
    test -x /opt/rocm/core-7.12/bin/amdclang++ || missing="$missing, bin/amdclang++ (the stable HIP compiler; package amdrocm-llvm-dev7.12)"; \
    test -x /opt/rocm/core-7.12/bin/hipcc || missing="$missing, bin/hipcc (GROMACS checks HIP flags with it; package amdrocm-llvm7.12)"; \
    test -x /opt/rocm/core-7.12/bin/hipconfig || missing="$missing, bin/hipconfig (reports the HIP version; package amdrocm-llvm7.12)"; \
    test -x /opt/rocm/core-7.12/bin/rocprofv3 || missing="$missing, bin/rocprofv3 (the kernel profiler; package amdrocm-profiler-base7.12)"; \
    test -x /opt/rocm/core-7.12/bin/rocprof-compute || missing="$missing, bin/rocprof-compute (--profile=counters; package amdrocm-profiler7.12)"; \
    test -x /opt/rocm/core-7.12/bin/rocprof-sys-sample || missing="$missing, bin/rocprof-sys-sample (--profile=systrace; package amdrocm-profiler7.12)"; \
    test -f /opt/rocm/core-7.12/include/hip/hiprtc.h || missing="$missing, include/hip/hiprtc.h (VkFFT compiles with hiprtc; package amdrocm-runtime-dev7.12)"; \
    test -f /opt/rocm/core-7.12/lib/cmake/hip-lang/hip-lang-config.cmake || missing="$missing, lib/cmake/hip-lang/hip-lang-config.cmake (CMake's HIP language; package amdrocm-runtime-dev7.12)"; \
    test -f /opt/rocm/core-7.12/lib/cmake/rocprim/rocprim-config.cmake || missing="$missing, lib/cmake/rocprim/rocprim-config.cmake (rocPRIM; package amdrocm-ccl-dev7.12-gfx120x)"; \
    test -f /opt/rocm/core-7.12/lib/cmake/hipfft/hipfft-config.cmake || missing="$missing, lib/cmake/hipfft/hipfft-config.cmake (hipFFT; package amdrocm-fft-dev7.12-gfx120x)"; \
    test -x /opt/rocm/core-7.12/lib/llvm/bin/ld.lld || missing="$missing, lib/llvm/bin/ld.lld (LLVM toolchains link with it; package amdrocm-llvm7.12)"; \
    test -d /opt/rocm/core-7.12/lib/llvm/amdgcn/bitcode || missing="$missing, lib/llvm/amdgcn/bitcode (the device libraries dev builds link; package amdrocm-llvm7.12)"; \
    if [ -n "$missing" ]; then \
      echo "ROCm 7.12 in /opt/rocm/core-7.12 lacks ${missing#, }. Install those packages into the base, or use a repository that ships them (ORCH_ROCM_APT__URL)." >&2; \
      exit 1; \
    fi \
 && if ! /opt/rocm/core-7.12/bin/rocprof-compute --version > /dev/null 2>&1; then \
      echo "warning: rocprof-compute does not start (its Python packages?): --profile=counters will record its error; pip install the requirements.txt it ships" >&2; \
    fi \
 && /opt/rocm/core-7.12/bin/amdclang++ --version | head -n1 \
 && /opt/rocm/core-7.12/bin/hipconfig --version
# The code-object version amdclang++ emits by default, measured (EI_ABIVERSION of a device
# object: 2, 3, 4 are v4, v5, v6) and kept in the image; dev builds pass
# -mcode-object-version=6, so a different default is refused.
RUN mkdir -p /opt/gmxbench \
 && printf '__global__ void probe(float *x) { x[0] = 1.0f; }\n' > /tmp/probe.hip \
 && /opt/rocm/core-7.12/bin/amdclang++ -x hip --rocm-path=/opt/rocm/core-7.12 --offload-arch=gfx1201 \
      --cuda-device-only --no-gpu-bundle-output -O3 -c /tmp/probe.hip -o /tmp/probe.o \
 && abi="$(od -An -tu1 -j8 -N1 /tmp/probe.o | tr -d ' ')" \
 && version="$((abi + 2))" \
 && rm /tmp/probe.hip /tmp/probe.o \
 && echo "$version" > /opt/gmxbench/stable-code-object-version \
 && echo "amdclang++ emits code-object v$version by default" \
 && if [ "$version" != "6" ]; then \
      echo "amdclang++ of ROCm 7.12 emits code-object v$version by default, but dev builds would pass -mcode-object-version=6, so stable and dev kernels would differ in ABI. Set ORCH_CODE_OBJECT_VERSION=$version." >&2; \
      exit 1; \
    fi
