"""Compile chosen GROMACS HIP units in variants and extract their code objects.

Runs in the HIP image with the configured build tree at /build/gromacs and writes to
/cg/objs/<variant>/<object path>; argv: units (comma-separated file names) and a JSON
object {variant: [extra clang options, offload arch or null]}.
"""

import json
import os
import shlex
import subprocess
import sys
import time

BUILD = "/build/gromacs"
OBJDUMP = "/usr/lib/llvm-21/bin/llvm-objdump"

with open(os.path.join(BUILD, "compile_commands.json")) as f:
    commands = json.load(f)
units = sys.argv[1].split(",")
variants = json.loads(sys.argv[2])
for entry in commands:
    if not any(entry["file"].endswith("/" + unit) for unit in units):
        continue
    output = os.path.join(entry["directory"], entry["output"])
    rel = os.path.relpath(output, BUILD)
    args = shlex.split(entry["command"])
    for name, (extra, arch) in variants.items():
        argv = list(args)
        dest = os.path.join("/cg/objs", name, rel)
        argv[argv.index("-o") + 1] = dest
        if arch:
            argv = [a.replace("--offload-arch=gfx1201", "--offload-arch=" + arch) for a in argv]
        argv[1:1] = extra
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        start = time.time()
        subprocess.run(argv, cwd=entry["directory"], check=True)
        subprocess.run([OBJDUMP, "--offloading", dest], check=True, capture_output=True)
        print(f"{name} {rel} {time.time() - start:.1f}s", flush=True)
