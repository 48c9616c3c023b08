#!/bin/bash
# Builds clang + lld (AMDGPU;X86) at one llvm-project commit in the gmxbench
# workspace volume. Usage: gmxbench-build-llvm COMMIT REVISION PREFIX REPOSITORY [BUNDLE|URL]
# COMMIT is checked out (a snapshot commit for a working tree with changes); REVISION is
# what `clang --version` names (the commit, or `<commit>-dirty`).
# A URL comes without its user-info: the tool puts that in /tmp/gmxbench-git-credentials,
# read by git's credential helper and removed before the container is committed.
# Exit codes the tool reads: 75 the clone lacks the bundle's prerequisites (send a whole
# bundle), 76 the device libraries do not fit this clang.
set -euo pipefail
CREDENTIALS=/tmp/gmxbench-git-credentials
trap 'rm -f "$CREDENTIALS"' EXIT
COMMIT=$1 REVISION=$2 PREFIX=$3 REPOSITORY=$4 FROM=${5:-}
if ! [[ $COMMIT =~ ^[0-9a-f]{40}$ ]]; then
  echo "not a commit: $COMMIT" >&2
  exit 2
fi
SRC=/llvm/src BUILD=/llvm/build CCACHE=/llvm/ccache
exec 9>/llvm/.lock
# One build per workspace at a time; the lock ends with the process that holds it.
if ! flock --nonblock 9; then
  echo "waiting for another LLVM build of this workspace to end"
  flock 9
fi

# The clone's git directory is kept outside the source tree: LLVM's CMake makes its
# revision headers depend on <source>/.git/logs/HEAD, so with it inside every checkout
# would regenerate them, and `ninja -n` (which cannot know they come out the same) would
# plan the recompile of everything that includes them.
GIT_DIR=/llvm/git
git_() { git --git-dir="$GIT_DIR" --work-tree="$SRC" "$@"; }

fetch() {
  if [ -d "$SRC/.git" ]; then
    mv "$SRC/.git" "$GIT_DIR"  # a clone of an earlier layout: kept, moved out
  fi
  if [ ! -d "$GIT_DIR" ]; then
    mkdir -p "$SRC"
    git init --quiet --bare "$GIT_DIR"
  fi
  if [ -z "$FROM" ]; then
    git_ cat-file -e "$COMMIT^{commit}"
  elif [ -f "$FROM" ]; then
    if ! git_ bundle verify --quiet "$FROM" 2>/tmp/verify.err; then
      cat /tmp/verify.err >&2
      exit 75
    fi
    git_ fetch --quiet -- "$FROM" "+refs/heads/*:refs/gmxbench/*"
    rm -f "$FROM"
  else
    git_ -c credential.helper= -c "credential.helper=store --file=$CREDENTIALS" \
      fetch --quiet --depth 1 -- "$FROM" "$COMMIT"
    rm -f "$CREDENTIALS"
    git_ update-ref "refs/gmxbench/$COMMIT" "$COMMIT"
  fi
  # Only the files that differ from the last build's commit are written.
  local last
  last=$(git_ rev-parse --quiet --verify HEAD || true)
  git_ -c advice.detachedHead=false checkout --quiet --force --detach "$COMMIT" --
  git_ clean -ffdxq
  if [ -n "$last" ]; then
    echo "checkout: $(git_ diff --name-only "$last" "$COMMIT" -- | wc -l) files differ from ${last:0:12}"
  else
    echo "checkout: $(git_ ls-files | wc -l) files (a new clone)"
  fi
}

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
  # clang's binary stays the same when only libLLVM.so changes: the compile cache keys
  # this compiler by all of its files.
  (cd "$PREFIX" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum \
    | cut -d' ' -f1) >/tmp/content-sha256
  mv /tmp/content-sha256 "$PREFIX/.content-sha256"
  "$PREFIX/bin/clang" --version | grep -F "$REVISION" \
    || { echo "clang --version does not name $REVISION" >&2; exit 1; }
}

# The device libraries are bitcode that only reads forward, and a code-object version
# needs its oclc_abi_version file: a mismatch shows here, not an hour into GROMACS.
smoke() {
  printf '%s\n' '#include <hip/hip_runtime.h>' \
    '__global__ void smoke(float *x) { x[threadIdx.x] = sinf(x[threadIdx.x]) + expf(x[threadIdx.x]); }' \
    >/tmp/smoke.hip
  if ! "$PREFIX/bin/clang++" -x hip --cuda-device-only -O3 -c /tmp/smoke.hip -o /tmp/smoke.o \
      --offload-arch=gfx1201 --rocm-path=/opt/rocm/core-7.12 \
      --rocm-device-lib-path=/opt/rocm/core-7.12/lib/llvm/amdgcn/bitcode -mcode-object-version=6 2>/tmp/smoke.err; then
    cat /tmp/smoke.err >&2
    exit 76
  fi
  echo "device libraries: smoke compile for gfx1201 (sinf, expf) passed"
}

fetch
# CMake runs when the line changed (each commit: the revision clang names); otherwise
# ninja re-runs it itself if a CMakeLists changed. An unused option would be a typo.
if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$BUILD/gmxbench-configured" 2>/dev/null)" != "$REVISION" ]; then
  configure 2>&1 | tee /tmp/configure.log
  if grep -q "Manually-specified variables were not used" /tmp/configure.log; then
    echo "an option of the configure line is not used by this llvm-project" >&2
    exit 1
  fi
  echo "$REVISION" >"$BUILD/gmxbench-configured"
fi
if [ -n "${GMXBENCH_LLVM_PLAN:-}" ]; then
  # What this commit would rebuild, and why (ninja's own words), without building.
  exec ninja -C "$BUILD" -n -d explain distribution
fi
build
smoke
