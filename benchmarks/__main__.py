"""`nox -s perf`: every benchmark of the tool, printed as tables."""

from __future__ import annotations

from tabulate import tabulate

from benchmarks import (
    bench_builds,
    bench_changepoints,
    bench_controlled,
    bench_db,
    bench_llvm_commit,
    bench_loop,
    bench_parse,
    bench_runs,
    bench_sequential,
    bench_slurm,
    bench_stats,
)

for title, table in [*bench_stats.main(), *bench_sequential.main(), *bench_controlled.main()]:
    print(title)
    if table and isinstance(table[0], dict):
        print(tabulate(table, headers="keys"))
    else:
        print("\n".join(str(line) for line in table))
    print()
print(
    f"history's change points over {bench_changepoints.COMMITS}-commit histories (E-divisive, "
    "α 0.05, threshold 2%; targets: A/A any change point ≤ 5%)"
)
print(tabulate(bench_changepoints.main(), headers="keys"))
print()
print("Results database (targets: ingest of 10,000 runs ≤ 10 s, history ≤ 0.5 s)")
print(tabulate(bench_db.main(), headers="keys"))
print()
print("Parsing (target ≤ 3 s for 1,000,000 rows)")
print(tabulate(bench_parse.main(), headers="keys"))
print()
print(
    f"Runs ({bench_runs.REPEATS} interleaved pairs, {bench_runs.SYSTEM}, {bench_runs.STEPS} steps)"
)
print(tabulate(bench_runs.main(), headers="keys"))
print()
print(
    f"SLURM executor against local (one-node cluster, {bench_slurm.REPEATS} runs each, "
    f"{bench_slurm.SYSTEM}, {bench_slurm.STEPS} steps)"
)
print(tabulate(bench_slurm.main(), headers="keys"))
print()
print(
    f"Compiler loop (bench --package {bench_loop.PACKAGE} toolchain, --repeats "
    f"{bench_loop.REPEATS}, --system {bench_loop.SYSTEM}), run twice"
)
print(tabulate(bench_loop.main(), headers="keys"))
print()
builds, targets, probes = bench_builds.main()
print("GROMACS builds recorded by the images (lockfile): time and compile cache counters")
print(tabulate(builds, headers="keys") if builds else "no GROMACS image in the engine")
print()
print("ROCm builds by GPU target count (2 cores): what each added target costs")
print(tabulate(targets, headers="keys") if targets else "no ROCm GROMACS image in the engine")
print()
print("Codegen fingerprint of the newest image of each platform, measured now")
print(tabulate(probes, headers="keys") if probes else "no GROMACS image in the engine")
print()
print(
    "An LLVM commit outside the compiler, real llvm-project (targets: ≤ 60 s, ≤ 300 MB "
    "per commit after the first)"
)
print(tabulate(bench_llvm_commit.main(), headers="keys"))
