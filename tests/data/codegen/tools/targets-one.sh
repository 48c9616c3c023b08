set -e
mkdir -p /cg
bash /ctx/targets-configure.sh
bash /ctx/prep.sh leapfrog_gpu_internal_hip.cpp
python3 - <<'PY'
import json, os, shlex, subprocess
BUILD = "/build/gromacs"
for entry in json.load(open(os.path.join(BUILD, "compile_commands.json"))):
    if not entry["file"].endswith("/leapfrog_gpu_internal_hip.cpp"):
        continue
    rel = os.path.relpath(os.path.join(entry["directory"], entry["output"]), BUILD)
    argv = [a for a in shlex.split(entry["command"]) if a != "--offload-arch=gfx942"]
    dest = os.path.join("/cg/objs/one", rel)
    argv[argv.index("-o") + 1] = dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    subprocess.run(argv, cwd=entry["directory"], check=True)
    subprocess.run(["/usr/lib/llvm-21/bin/llvm-objdump", "--offloading", dest], check=True, capture_output=True)
    print(shlex.join(argv))
PY
L=/usr/lib/llvm-21/bin
cd /cg/objs/one
for f in $(find . -name '*.hipv4-*' | sort); do
  arch=${f##*--}
  mkdir -p /out/one/$(dirname $f)
  gzip -n -9 -c $f > /out/one/$f.gz
  $L/llvm-objdump -d --no-show-raw-insn --no-leading-addr --mcpu=$arch $f | gzip -n -9 > /out/one/$f.objdump.txt.gz
  $L/llvm-readelf --notes $f | gzip -n -9 > /out/one/$f.notes.txt.gz
done
