"""The files of one run summed into one :class:`Breakdown`, by clean kernel name."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from itertools import chain
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import Breakdown, build_breakdown
from orchestrator.parsers.categories import classify, strip_kernel_suffix
from orchestrator.parsers.rocpd import agents_note, is_sqlite, read_rocpd
from orchestrator.parsers.rocprof.files import NOT_KERNEL, from_trace, read_file

_ROCPD_LABEL = "rocpd kernel dispatches"


def _clean_name(name: str) -> str:
    """Legacy rocprof's `` [clone .kd]`` dropped so names match rocprofv3's, which may keep
    the descriptor's ``.kd`` (``--mangled-kernels``): records store that spelling."""
    return strip_kernel_suffix(name, keep_descriptor=True)


def _rows(
    calls: dict[str, int], total: dict[str, int]
) -> Iterable[tuple[str, str, int, int, bool]]:
    for raw, ns in total.items():
        name = _clean_name(raw)
        category, known = classify(name)
        yield name, category, calls[raw], ns, known


def _quantile(ordered: list[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, ``inclusive``)."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _call_stats(
    durations: dict[str, list[array[int]]], calls: dict[str, int]
) -> dict[str, tuple[float, float, float]]:
    """``(median, p10, p90)`` in µs per clean name, when every call has a duration."""
    by_name: dict[str, list[array[int]]] = {}
    for raw, parts in durations.items():
        by_name.setdefault(_clean_name(raw), []).extend(parts)
    stats: dict[str, tuple[float, float, float]] = {}
    for name, parts in by_name.items():
        ordered = sorted(parts[0] if len(parts) == 1 else chain.from_iterable(parts))
        if not ordered or len(ordered) != calls.get(name):
            continue
        stats[name] = (
            _quantile(ordered, 0.5) / 1e3,
            _quantile(ordered, 0.1) / 1e3,
            _quantile(ordered, 0.9) / 1e3,
        )
    return stats


def _is_rocpd(path: Path) -> bool:
    return path.suffix.lower() == ".db" or is_sqlite(path)


def _combine(files: list[Path]) -> Breakdown:
    labels: list[str] = []
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    durations: dict[str, list[array[int]]] = {}
    agents: Counter[str] = Counter()
    for path in files:
        if _is_rocpd(path):
            dispatches, on = read_rocpd(path)
            agents.update(on)
            label, c, t, d = from_trace(_ROCPD_LABEL, dispatches)
        else:
            label, c, t, d = read_file(path)
        if label not in labels:
            labels.append(label)
        for name, ns in t.items():
            total[name] = total.get(name, 0) + ns
            calls[name] = calls.get(name, 0) + c[name]
        for name, values in (d or {}).items():
            durations.setdefault(name, []).append(values)
    clean_calls: dict[str, int] = {}
    for raw, n in calls.items():
        clean_calls[_clean_name(raw)] = clean_calls.get(_clean_name(raw), 0) + n
    return build_breakdown(
        " + ".join(labels),
        [str(p) for p in files],
        _rows(calls, total),
        call_stats=_call_stats(durations, clean_calls),
        notes=[note] if (note := agents_note(agents)) else [],
    )


def parse_kernel_csv(path: Path) -> Breakdown:
    """One rocprofv3 kernel_trace/kernel_stats CSV or rocpd database, or a legacy rocprof
    results CSV."""
    return _combine([path])


def find_rocprof_files(directory: Path) -> list[Path]:
    """rocprofv3's rocpd databases, else kernel CSVs, under ``directory`` (recursive).

    A run of ROCm 7.0 or later writes rocpd by default (``<host>/<pid>_results.db``); where
    both formats were written they hold the same dispatches, so the databases are read.
    Traces win over stats because summing End-Start per dispatch is exact; within the
    chosen kind every file (one per process id) is returned, to be summed.
    """

    def glob(pattern: str) -> list[Path]:
        return sorted(p for p in directory.rglob(pattern) if p.is_file())

    databases = glob("*.db")
    if databases:
        return databases

    v1_stats = [p for p in glob("*.stats.csv") if not NOT_KERNEL.search(p.name.lower())]
    siblings = [stats.with_name(stats.name[: -len(".stats.csv")] + ".csv") for stats in v1_stats]
    v1_traces = sorted({p for p in siblings if p.is_file()} | set(glob("results.csv")))
    for found in (glob("*kernel_trace.csv"), v1_traces, glob("*kernel_stats.csv"), v1_stats):
        if found:
            return found
    return []


def parse_rocprof(path: Path) -> Breakdown:
    """A kernel CSV or a directory of rocprof output → breakdown (files summed)."""
    if path.is_dir():
        files = find_rocprof_files(path)
        if not files:
            hint = ""
            if any(path.rglob("*counter_collection.csv")):
                hint = (
                    " It holds counter_collection.csv files (rocprofv3 --pmc, one per pass, "
                    "each pass a rerun): pass one of them by name."
                )
            raise UserError(
                f"No rocpd database (*.db) or rocprof kernel CSV (*kernel_trace.csv, "
                f"*kernel_stats.csv, results.stats.csv) under {path}.{hint} Profile with "
                "'rocprofv3 --kernel-trace --output-format rocpd -d <dir> -- gmx mdrun ...'."
            )
        return _combine(files)
    if not path.exists():
        raise UserError(
            f"{path} does not exist. Pass a rocpd database, a rocprof CSV or their directory."
        )
    return parse_kernel_csv(path)
