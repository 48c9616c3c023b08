"""The CSVs ``rocprof-compute analyze --save-dfs`` writes: top kernels and speed-of-light."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.parsers.rocprof_compute.dispatches import clean_kernel_name
from orchestrator.parsers.rocprof_compute.models import AnalyzeKernel, AnalyzeMetric, AnalyzeTables
from orchestrator.parsers.rocprof_compute.tables import read_table, relative


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def parse_analyze_dir(directory: Path) -> AnalyzeTables:
    """Top kernels and System Speed-of-Light from ``analyze --save-dfs`` CSVs in ``directory``.

    Files are found by title, at any depth (``*Top_Kernels*.csv``,
    ``2.1_*Speed-of-Light*.csv``), columns by name; analyze writes ``inf`` for a rate over
    a zero duration, kept as None. A directory without them gives empty tables.
    """
    tables = AnalyzeTables(directory=str(directory))
    top = sorted(directory.rglob("*Top_Kernels*.csv"))
    sol = sorted(directory.rglob("2.1_*Speed*Light*.csv"))
    if top:
        table = read_table(top[0], "rocprof-compute analyze top kernels")
        cols = {_key(h): h for h in table.header}
        tables.files.append(relative(top[0], directory))
        for line, cells in table.rows:

            def num(key: str, cells: list[str] = cells, line: int = line) -> float | None:
                column = cols.get(key)
                return None if column is None else _finite(table.number(cells, column, line))

            tables.top_kernels.append(
                AnalyzeKernel(
                    name=clean_kernel_name(table.text(cells, cols.get("kernelname", "")) or ""),
                    count=num("count"),
                    sum_ns=num("sumns"),
                    mean_ns=num("meanns"),
                    median_ns=num("medianns"),
                    pct=num("pct"),
                )
            )
    if sol:
        table = read_table(sol[0], "rocprof-compute analyze speed-of-light")
        cols = {_key(h): h for h in table.header}
        tables.files.append(relative(sol[0], directory))
        value_col = cols.get("avg") or cols.get("value") or ""
        for line, cells in table.rows:
            metric = table.text(cells, cols.get("metric", ""))
            if metric is None:
                continue
            tables.speed_of_light.append(
                AnalyzeMetric(
                    metric=metric,
                    value=_finite(table.number(cells, value_col, line)),
                    unit=table.text(cells, cols.get("unit", "")),
                    peak=_finite(table.number(cells, cols.get("peak", ""), line)),
                    pct_of_peak=_finite(table.number(cells, cols.get("pctofpeak", ""), line)),
                )
            )
    return tables
