set -e
cd /llc
L=/usr/lib/llvm-21/bin
for t in gfx1201 gfx1200 gfx1100 gfx1030 gfx942 gfx90a gfx908 gfx900; do
  for w in 32 64; do
    case $t in gfx9*) [ $w = 64 ] || continue; attr="";; *) attr=$([ $w = 64 ] && echo "-mattr=+wavefrontsize64" || echo "");; esac
    agpr=$(case $t in gfx908|gfx90a|gfx942) echo 1;; *) echo 0;; esac)
    src=kernels.ll; [ $agpr = 1 ] || { grep -v 'a31\|a15\|a255' kernels.ll > k_noagpr.ll; src=k_noagpr.ll; }
    $L/llc -mtriple=amdgcn-amd-amdhsa -mcpu=$t $attr $src -o $t-w$w.s
    $L/llc -mtriple=amdgcn-amd-amdhsa -mcpu=$t $attr $src -filetype=obj -o $t-w$w.o
    $L/llvm-readelf --notes $t-w$w.o > $t-w$w.notes.txt
  done
done
ls
