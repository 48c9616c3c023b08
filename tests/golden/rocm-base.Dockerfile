# Builder base of the ROCm platform: ROCm 7.12 at /opt/rocm/core-7.12, GROMACS' HIP
# build dependencies and AMD's profilers (rocprofv3, rocprof-compute, rocprof-sys). Stable
# and dev GROMACS images and LLVM toolchains all start here.
FROM rocm/dev-ubuntu-24.04:7.12-complete
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
# ROCm development packages GROMACS HIP needs (rocPRIM, hipFFT/rocFFT, hiprtc in hip-dev,
# amdclang++ and the device libraries in rocm-llvm-dev) and the profilers (rocprofv3 in
# rocprofiler-sdk, rocprof-compute in rocprofiler-compute, rocprof-sys in
# rocprofiler-systems). -complete images already have them, and then nothing is
# installed. Otherwise the names the configured apt repository knows are installed
# (repo.radeon.com names); a TheRock base (repo.amd.com, amdrocm-* packages) must come with
# its core SDK and amdrocm-profiler, which the checks below report.
RUN root="$(readlink -e /opt/rocm/core-7.12 2>/dev/null || readlink -e /opt/rocm 2>/dev/null || true)"; \
    if [ -x "$root/bin/amdclang++" ] && [ -x "$root/bin/rocprofv3" ] && [ -x "$root/bin/hipcc" ] \
       && [ -x "$root/bin/rocprof-compute" ] && [ -x "$root/bin/rocprof-sys-sample" ] \
       && [ -f "$root/lib/cmake/rocprim/rocprim-config.cmake" ] && [ -f "$root/include/hip/hiprtc.h" ]; then \
      echo "ROCm development packages already in $root"; \
    else \
      apt-get update \
      && for p in hip-dev rocprim-dev hipfft-dev rocfft-dev rocprofiler-sdk rocm-llvm-dev \
                  rocprofiler-compute rocprofiler-systems; do \
           if apt-cache show "$p" > /dev/null 2>&1; then echo "$p"; fi; \
         done | xargs -r apt-get install -y --no-install-recommends \
      && rm -rf /var/lib/apt/lists/*; \
    fi
# The reference layout is /opt/rocm/core-7.12 (where TheRock packages install). Official
# images install to /opt/rocm-<x.y.z> with /opt/rocm a symlink to it: then /opt/rocm/core-7.12
# is made a symlink to that real root (it lands inside the root itself, a harmless loop),
# so every recipe path and every path GROMACS records is the reference one.
RUN if [ ! -e /opt/rocm/core-7.12 ]; then \
      real="$(readlink -e /opt/rocm 2>/dev/null || true)"; \
      if [ -z "$real" ] || [ ! -d "$real/bin" ]; then \
        echo "No ROCm found: neither /opt/rocm/core-7.12 nor /opt/rocm exists in rocm/dev-ubuntu-24.04:7.12-complete" >&2; \
        exit 1; \
      fi; \
      ln -s "$real" /opt/rocm/core-7.12; \
    fi \
 && echo "ROCm root /opt/rocm/core-7.12 -> $(readlink -f /opt/rocm/core-7.12)"
ENV ROCM_PATH=/opt/rocm/core-7.12 \
    HIP_PATH=/opt/rocm/core-7.12 \
    PATH=/opt/rocm/core-7.12/bin:$PATH \
    LD_LIBRARY_PATH=/opt/rocm/core-7.12/lib
# Fail here, not an hour into a GROMACS build, when something the recipes use is missing.
RUN test -x /opt/rocm/core-7.12/bin/amdclang++ \
      || { echo "missing /opt/rocm/core-7.12/bin/amdclang++ (rocm-llvm): the stable HIP compiler" >&2; exit 1; } \
 && test -x /opt/rocm/core-7.12/bin/rocprofv3 \
      || { echo "missing /opt/rocm/core-7.12/bin/rocprofv3 (rocprofiler-sdk): the kernel profiler" >&2; exit 1; } \
 && test -x /opt/rocm/core-7.12/bin/rocprof-compute \
      || { echo "missing /opt/rocm/core-7.12/bin/rocprof-compute (--profile=counters): add package rocprofiler-compute (ROCm 6.3-7.x apt repository) or amdrocm-profiler (TheRock core SDK) to the base image" >&2; exit 1; } \
 && test -x /opt/rocm/core-7.12/bin/rocprof-sys-sample \
      || { echo "missing /opt/rocm/core-7.12/bin/rocprof-sys-sample (--profile=systrace): add package rocprofiler-systems (ROCm 6.3-7.x apt repository) or amdrocm-profiler (TheRock core SDK) to the base image" >&2; exit 1; } \
 && if ! /opt/rocm/core-7.12/bin/rocprof-compute --version > /dev/null 2>&1; then \
      echo "warning: rocprof-compute does not start (its Python packages?): --profile=counters will record its error; pip install -r /opt/rocm/core-7.12/libexec/rocprofiler-compute/requirements.txt" >&2; \
    fi \
 && test -x /opt/rocm/core-7.12/bin/hipcc \
      || { echo "missing /opt/rocm/core-7.12/bin/hipcc (hip-dev): GROMACS checks HIP flags with it" >&2; exit 1; } \
 && test -f /opt/rocm/core-7.12/lib/cmake/rocprim/rocprim-config.cmake \
      || { echo "missing rocPRIM's CMake config in /opt/rocm/core-7.12/lib/cmake/rocprim (rocprim-dev)" >&2; exit 1; } \
 && test -f /opt/rocm/core-7.12/lib/cmake/hip-lang/hip-lang-config.cmake \
      || { echo "missing /opt/rocm/core-7.12/lib/cmake/hip-lang (hip-dev): CMake's HIP language needs it" >&2; exit 1; } \
 && test -f /opt/rocm/core-7.12/include/hip/hiprtc.h \
      || { echo "missing /opt/rocm/core-7.12/include/hip/hiprtc.h (hip-dev): VkFFT compiles with hiprtc" >&2; exit 1; } \
 && if [ ! -d /opt/rocm/core-7.12/lib/llvm/amdgcn/bitcode ]; then \
      echo "warning: no device libraries in /opt/rocm/core-7.12/lib/llvm/amdgcn/bitcode; dev builds pass that path" >&2; \
    fi \
 && amdclang++ --version | head -n1 \
 && hipconfig --version
