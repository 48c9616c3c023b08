"""`nox -s perf`: every benchmark of the tool, printed as tables."""

from __future__ import annotations

from tabulate import tabulate

from benchmarks import bench_loop, bench_parse, bench_runs

print("Parsing (target ≤ 3 s for 1,000,000 rows)")
print(tabulate(bench_parse.main(), headers="keys"))
print()
print(
    f"Runs ({bench_runs.REPEATS} interleaved pairs, {bench_runs.SYSTEM}, {bench_runs.STEPS} steps)"
)
print(tabulate(bench_runs.main(), headers="keys"))
print()
print(
    f"Compiler loop (bench --package {bench_loop.PACKAGE} toolchain, --repeats "
    f"{bench_loop.REPEATS}, --system {bench_loop.SYSTEM}), run twice"
)
print(tabulate(bench_loop.main(), headers="keys"))
