# LLVM build environment: gmxbench-builder:rocm-example plus ld.lld and gmxbench-build-llvm
# (clang + lld for AMDGPU;X86; the source, build tree and ccache live in a volume).
FROM gmxbench-builder:rocm-example
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# LLVM links with lld (-fuse-ld=lld finds `ld.lld` on the PATH): the builder's own, from
# Debian's lld-N or the LLVM below the ROCm root of AMD's stack.
RUN if ! command -v ld.lld > /dev/null; then \
      linker="$(find /usr/lib/llvm-*/bin /opt/rocm/core-7.12/lib/llvm/bin -maxdepth 1 -name ld.lld 2> /dev/null | sort -V | tail -n 1)"; \
      test -n "$linker" || { echo "no ld.lld in gmxbench-builder:rocm-example" >&2; exit 1; }; \
      ln -s "$linker" /usr/local/bin/ld.lld; \
    fi \
 && ld.lld --version
COPY build-llvm.sh /usr/local/bin/gmxbench-build-llvm
RUN chmod 0755 /usr/local/bin/gmxbench-build-llvm
