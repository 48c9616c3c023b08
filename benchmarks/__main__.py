"""`nox -s perf`: every benchmark of the tool, printed as tables."""

from __future__ import annotations

from tabulate import tabulate

from benchmarks import bench_parse, bench_runs

print("Parsing (target ≤ 3 s for 1,000,000 rows)")
print(tabulate(bench_parse.main(), headers="keys"))
print()
print(
    f"Runs ({bench_runs.REPEATS} interleaved pairs, {bench_runs.SYSTEM}, {bench_runs.STEPS} steps)"
)
print(tabulate(bench_runs.main(), headers="keys"))
