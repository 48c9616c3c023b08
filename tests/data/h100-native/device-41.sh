#!/bin/bash
# Issue 41 on the lent H100: the tool itself, natively (no container engine), in the
# background (setsid). bench A/B (a ptxas option), A/A with ncu, A/A and A/B wall clock.
# Progress in $O/progress; everything lands in $O. Usage: device-41.sh REPO OUT
set -u
O=$2; mkdir -p "$O"
exec >>"$O/device.log" 2>&1
# a copy of the checkout: later calls may sync the working tree under $1
R=/tmp/r41; rm -rf "$R"; cp -a "$1" "$R"
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$O/progress"; }
say start
python3 --version; nproc; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,compute_cap --format=csv
command -v nvcc ncu cuobjdump cmake ninja gcc ccache c++filt; nvcc --version | tail -2; cmake --version | head -1
python3 - "$R" <<'PY'
import glob, sys, zipfile
tag = "cp%d%d" % sys.version_info[:2]
for wheel in sorted(glob.glob(sys.argv[1] + "/.devcarry/wheels/*.whl")):
    if "-cp3" not in wheel or f"-{tag}-" in wheel:
        zipfile.ZipFile(wheel).extractall("/tmp/py")
PY
export PYTHONPATH=/tmp/py:$R PATH=/usr/local/cuda/bin:$PATH CUDA_HOME=/usr/local/cuda
export ORCH_PLATFORM=cuda ORCH_EXECUTOR=native ORCH_NATIVE_ROOT=/tmp/gromacs ORCH_RESULTS_DIR=$O/results ORCH_JOBS=8
export ORCH_GROMACS__URL=$R/.devcarry/gromacs-2026.3.tar.gz ORCH_GROMACS__REF=2026.3
export ORCH_GROMACS__SHA256=0b4ec8284fa94ffe068121ccede3f477fc57969afd598ede7c1bf5a11e3c3736
G="python3 -m orchestrator"
M="-nb gpu -pme gpu -update gpu -notunepme"
S="--system water:96k --steps 5000"
$G settings > "$O/settings.txt" 2>&1
say "bench A/B trace"
$G bench --flags='-Xptxas -maxrregcount=48' $S --repeats 6 --profile trace --tag ab-trace -- $M > "$O/bench-ab-trace.txt" 2>&1; say "rc=$?"
say "bench A/A trace"
$G bench $S --repeats 8 --profile trace --tag aa-trace -- $M > "$O/bench-aa-trace.txt" 2>&1; say "rc=$?"
say "bench A/A wall"
$G bench $S --repeats 10 --profile none --tag aa-wall -- $M > "$O/bench-aa-wall.txt" 2>&1; say "rc=$?"
say "bench A/B wall"
$G bench --flags='-Xptxas -maxrregcount=48' $S --repeats 8 --profile none --tag ab-wall -- $M > "$O/bench-ab-wall.txt" 2>&1; say "rc=$?"
say "pack"
( cd "$O" && tar cJf results.tar.xz results && ls -la >> progress )
say done
