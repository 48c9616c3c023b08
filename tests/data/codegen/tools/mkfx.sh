set -e
L=/usr/lib/llvm-21/bin
out=/cg/fx
# GROMACS code objects: a, b (same compile twice), nounroll (+ -fno-unroll-loops), gfx90a
for v in a b nounroll gfx90a; do
  cd /cg/objs/$v
  for f in $(find . -name '*.hipv4-*' | sort); do
    arch=${f##*--}
    mkdir -p $out/gromacs/$v/$(dirname $f)
    gzip -n -9 -c $f > $out/gromacs/$v/$f.gz
    $L/llvm-objdump -d --no-show-raw-insn --no-leading-addr --mcpu=$arch $f | gzip -n -9 > $out/gromacs/$v/$f.objdump.txt.gz
    $L/llvm-readelf --notes $f | gzip -n -9 > $out/gromacs/$v/$f.notes.txt.gz
  done
done
for v in v0 v1; do
  cd /cg/pcrel/$v; f=layout.o.0.hipv4-amdgcn-amd-amdhsa--gfx1201
  mkdir -p $out/layout/$v
  gzip -n -9 -c $f > $out/layout/$v/$f.gz
  $L/llvm-objdump -d --no-show-raw-insn --no-leading-addr --mcpu=gfx1201 $f | gzip -n -9 > $out/layout/$v/$f.objdump.txt.gz
  $L/llvm-readelf --notes $f | gzip -n -9 > $out/layout/$v/$f.notes.txt.gz
done
cp /cg/pcrel/layout.hip $out/layout/
mkdir -p $out/llc21; cd /cg/llc
cp kernels.ll gen.py $out/llc21/
for s in *.s; do b=${s%.s}; gzip -n -9 -c $b.notes.txt > $out/llc21/$b.notes.txt.gz; done
python3 - <<'PY'
import glob, json, re
res = {}
for s in sorted(glob.glob('/cg/llc/*.s')):
    cur = None; occ = {}
    for line in open(s):
        m = re.match(r'^([A-Za-z_0-9]+):\s+; @', line)
        if m: cur = m.group(1)
        m = re.match(r'^; Occupancy: (\d+)', line)
        if m and cur: occ[cur] = int(m.group(1))
    res[s.split('/')[-1][:-2]] = occ
json.dump(res, open('/cg/fx/llc21/llc21-occupancy.json', 'w'), indent=1, sort_keys=True)
PY
echo $(/usr/lib/llvm-21/bin/llc --version | sed -n 2p) > $out/llc21/llc-version.txt
