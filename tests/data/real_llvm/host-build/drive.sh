#!/bin/bash
# Real clang+lld on the lent GPU host, natively, with the functions the product's
# toolchain-llvm script renders (configure, build). Phases: start | wait | finish.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/gmxllvm
RET=${OUT:-}
OUT=$W/out  # kept across calls; copied to the call's $OUT at the end
mkdir -p "$W" "$OUT"
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }

cat >"$W/env.sh" <<EOF
SRC=$W/src BUILD=$W/build CCACHE=$W/ccache
REPOSITORY=$(cat "$D/repository")
extra=()
command -v ccache >/dev/null || extra+=(-DLLVM_CCACHE_BUILD=OFF)
command -v ld.lld >/dev/null || extra+=(-DLLVM_USE_LINKER=)
cmake() { command cmake "\$@" "\${extra[@]}"; }
EOF
sed -n '/^configure() {/,/^}/p; /^build() {/,/^}/p' "$D/rendered.sh" >"$W/functions.sh"

case $1 in
start)
  { nproc; gcc --version | head -1; cmake --version | head -1; echo "ninja $(ninja --version)";
    for t in ld.lld ccache xz zstd patch git; do echo "$t: $(command -v $t || echo none)"; done
    free -g | head -2; df -h /tmp | tail -1; } >"$OUT/host.txt" 2>&1
  t0=$(now); mkdir -p "$W/src"; { tar -xJf "$D/cut.tar.xz" -C "$W/src" || python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$D/cut.tar.xz" "$W/src"; }; t1=$(now)
  echo "unpack $(secs "$t0" "$t1")" >>"$OUT/times.txt"
  rm -rf "$W/inputs"; cp -r "$D" "$W/inputs"
  # A new session: the lent host kills what a call leaves running, except that.
  setsid nohup bash "$W/inputs/drive.sh" all >"$W/all.out" 2>&1 </dev/null &
  ;;
all)
  source "$W/env.sh"; source "$W/functions.sh"
  step() { echo "$1 $2" >>"$OUT/times.txt"; }
  REVISION=$(cat "$D/commit1") PREFIX=$W/prefix1
  t0=$(now); configure >"$OUT/configure1.log" 2>&1; rc=$?; t1=$(now); step configure1 "$(secs "$t0" "$t1") rc=$rc"
  ninja -C "$BUILD" -j"$(nproc)" distribution >"$W/ninja1.log" 2>&1; rc=$?; t2=$(now)
  step ninja-distribution1 "$(secs "$t1" "$t2") rc=$rc"
  build >"$OUT/install1.log" 2>&1; rc=$?; t3=$(now); step install1 "$(secs "$t2" "$t3") rc=$rc"
  tail -5 "$W/ninja1.log" >"$OUT/ninja1.tail"
  cp "$BUILD/.ninja_log" "$OUT/ninja_log1"
  { du -sb "$W/prefix1"; (cd "$W/prefix1" && find . -type f -size +1M -printf '%s %p\n' | sort -n);
    "$W/prefix1/bin/clang" --version; } >"$OUT/prefix1.txt" 2>&1
  # The one-file AMDGPU commit: its edit, and the revision clang then names.
  (cd "$W/src" && { patch -p1 <"$D/edit.patch" || git apply "$D/edit.patch"; }) >"$OUT/patch.txt" 2>&1
  REVISION=$(cat "$D/commit2") PREFIX=$W/prefix2
  t0=$(now); configure >"$OUT/configure2.log" 2>&1; rc=$?; t1=$(now); step configure2 "$(secs "$t0" "$t1") rc=$rc"
  ninja -C "$BUILD" -n -d explain distribution >"$OUT/plan2.txt" 2>"$OUT/explain2.txt"
  t1=$(now); ninja -C "$BUILD" -j"$(nproc)" distribution >"$OUT/ninja2.log" 2>&1; rc=$?; t2=$(now)
  step ninja-distribution2 "$(secs "$t1" "$t2") rc=$rc"
  build >"$OUT/install2.log" 2>&1; rc=$?; t3=$(now); step install2 "$(secs "$t2" "$t3") rc=$rc"
  cp "$BUILD/.ninja_log" "$OUT/ninja_log2"
  { du -sb "$W/prefix2"; "$W/prefix2/bin/clang" --version; } >"$OUT/prefix2.txt" 2>&1
  # One GROMACS HIP unit, device side, for gfx1201 with both clangs.
  for n in 1 2; do
    mkdir -p "$OUT/unit$n"
    t0=$(now)
    (cd "$OUT/unit$n" && CLANG=$W/prefix$n/bin/clang++ bash "$D/unit/compile.sh") >"$OUT/unit$n/compile.log" 2>&1
    rc=$?; step "unit$n" "$(secs "$t0" "$(now)") rc=$rc"
  done
  touch "$W/done"
  ;;
wait)
  for _ in $(seq 1 "${2:-55}"); do
    [ -f "$W/done" ] && break
    sleep 10
  done
  ;;
esac
cat "$OUT/times.txt" 2>/dev/null
tail -c 600 "$W/ninja1.log" 2>/dev/null | tr '\r' '\n' | tail -2
[ -n "$RET" ] && cp -r "$OUT/." "$RET/"
true
