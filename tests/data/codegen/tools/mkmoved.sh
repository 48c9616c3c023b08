#!/usr/bin/env bash
# cpu/moved/: hot.c compiled as it is (base), behind another function and its data (moved:
# every %rip displacement and address shifts) and with another immediate (operand).
set -euo pipefail
cd "$(dirname "$0")/../cpu/moved"
for variant in "base -DOFFSET=5" "moved -DOFFSET=5 -DMOVED=1" "operand -DOFFSET=7"; do
  read -r name flags <<<"$variant"
  # shellcheck disable=SC2086
  gcc -O2 -fPIC -shared -o "/tmp/hot-$name.so" hot.c $flags
  nm -S --defined-only "/tmp/hot-$name.so" | grep ' spread_on_grid$' > "$name.nm.txt"
  objdump -d --no-show-raw-insn "/tmp/hot-$name.so" \
    | sed -n '/<spread_on_grid>:/,/^$/p' > "$name.objdump.txt"
done
{ gcc --version | head -1; objdump --version | head -1; } > tools.txt
