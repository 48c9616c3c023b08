set -e
cd /build/gromacs
# generated prerequisites of the chosen objects (headers etc.), with ccache
time ninja $(python3 -c "
import json,sys
cc=json.load(open('compile_commands.json'))
print(' '.join(c['output'].replace('/build/gromacs/','') for c in cc if any(c['file'].endswith(u) for u in sys.argv[1].split(','))))" "$1") > /cg/ninja.log 2>&1 || { tail -30 /cg/ninja.log; exit 1; }
tail -3 /cg/ninja.log
