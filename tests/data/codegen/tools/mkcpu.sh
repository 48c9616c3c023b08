set -e
L=$(ls /opt/gromacs/*/lib/libgromacs.so.7.0.0)
nm -S --defined-only $L > /tmp/nm.txt
# windows: PME (gather .. spread_on_grid end) and one nbnxm kernel
nm -S --defined-only -C $L > /tmp/nmC.txt
python3 - <<'PY' > /tmp/windows
def find(prefix):
    for line in open('/tmp/nmC.txt'):
        p = line.split(None, 3)
        if len(p) == 4 and p[2] in ('T', 't') and p[3].startswith(prefix):
            return int(p[0], 16), int(p[1], 16)
g = find('gather_f_bsplines('); s = find('spread_on_grid(')
lo, hi = min(g[0], s[0]), max(g[0] + g[1], s[0] + s[1])
k = find('nbnxm_kernel_ElecEw_VdwLJ_F_4xm(')
print(hex(lo), hex(hi), hex(k[0]), hex(k[0] + k[1]))
PY
read lo hi klo khi < /tmp/windows
echo "windows: $lo-$hi $klo-$khi"
objdump -d --no-show-raw-insn --start-address=$lo --stop-address=$hi $L | gzip -n -9 > /out/objdump-pme.txt.gz
objdump -d --no-show-raw-insn --start-address=$klo --stop-address=$khi $L | gzip -n -9 > /out/objdump-nbnxm.txt.gz
python3 - $lo $hi $klo $khi <<'PY' | gzip -n -9 > /out/nm.txt.gz
import sys
lo, hi, klo, khi = (int(x, 16) for x in sys.argv[1:])
for line in open('/tmp/nm.txt'):
    p = line.split(None, 3)
    if len(p) == 4 and p[2] in 'TtWw' and (lo <= int(p[0], 16) < hi or klo <= int(p[0], 16) < khi):
        sys.stdout.write(line)
PY
zcat /out/nm.txt.gz | awk '{print $4}' | c++filt | gzip -n -9 > /out/cxxfilt.txt.gz
objdump --version | head -1 > /out/tools.txt; nm --version | head -1 >> /out/tools.txt; echo "$L" >> /out/tools.txt
