configure() {
  cmake -S "$SRC/llvm" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/opt/llvm \
    '-DLLVM_ENABLE_PROJECTS=clang;lld' \
    '-DLLVM_TARGETS_TO_BUILD=AMDGPU;X86' \
    '-DLLVM_DISTRIBUTION_COMPONENTS=clang;clang-resource-headers;clang-offload-bundler;lld;llvm-objdump;llvm-readobj;llvm-readelf;LLVM;clang-cpp' \
    -DLLVM_LINK_LLVM_DYLIB=ON \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_CCACHE_BUILD=ON \
    "-DLLVM_CCACHE_DIR=$CCACHE" \
    -DLLVM_CCACHE_MAXSIZE=20G \
    -DLLVM_APPEND_VC_REV=OFF \
    "-DCLANG_VC_REPOSITORY=$REPOSITORY" \
    "-DCLANG_VC_REVISION=$REVISION" \
    -DLLVM_INCLUDE_TESTS=OFF \
    -DLLVM_INCLUDE_EXAMPLES=OFF \
    -DLLVM_INCLUDE_BENCHMARKS=OFF \
    -DLLVM_INCLUDE_DOCS=OFF \
    -DCLANG_INCLUDE_DOCS=OFF
}
build() {
  ninja -C "$BUILD" -j"$(nproc)" distribution
  rm -rf /tmp/stage
  DESTDIR=/tmp/stage ninja -C "$BUILD" install-distribution-stripped >/dev/null
  mkdir -p "$(dirname "$PREFIX")"
  mv /tmp/stage/opt/llvm "$PREFIX"
  "$PREFIX/bin/clang" --version | grep -F "$REVISION" \
    || { echo "clang --version does not name $REVISION" >&2; exit 1; }
}
