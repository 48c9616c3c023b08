set -e
mkdir -p /cg
date -u
bash /ctx/targets-configure.sh
date -u
bash /ctx/prep.sh leapfrog_gpu_internal_hip.cpp
date -u
python3 /ctx/compile.py leapfrog_gpu_internal_hip.cpp '{"two": [[], null], "two-nounroll": [["-fno-unroll-loops"], null]}'
date -u
L=/usr/lib/llvm-21/bin
for v in two two-nounroll; do  # stored as targets/base and targets/nounroll
  cd /cg/objs/$v
  for f in $(find . -name '*.hipv4-*' | sort); do
    arch=${f##*--}
    mkdir -p /out/$v/$(dirname $f)
    gzip -n -9 -c $f > /out/$v/$f.gz
    $L/llvm-objdump -d --no-show-raw-insn --no-leading-addr --mcpu=$arch $f | gzip -n -9 > /out/$v/$f.objdump.txt.gz
    $L/llvm-readelf --notes $f | gzip -n -9 > /out/$v/$f.notes.txt.gz
  done
done
python3 -c "
import json
cc=json.load(open('/build/gromacs/compile_commands.json'))
print([c['command'] for c in cc if c['file'].endswith('leapfrog_gpu_internal_hip.cpp')][0])" > /out/compile-line.txt
$L/clang++ --version | head -1 > /out/clang-version.txt
date -u
