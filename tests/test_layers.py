"""The architecture as a test: layers import only downwards, and each concern has one home.

The module graph is read from the source (every `import` and `from … import`, also
those inside functions), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "orchestrator"
#: Lowest first; a module may import its own layer and the layers before it.
LAYERS = [
    "core", "engine", "parsers", "platforms", "images", "store", "runs", "verdict", "report",
    "workflows", "cli",
]  # fmt: skip
#: Where a module's layer is not its top folder's: a feature package (one folder for one idea)
#: spans layers, so each of its modules is placed here, the longest prefix winning.
PLACED: dict[str, str] = {
    # programs run inside containers (stdlib only): they import nothing of ours
    "orchestrator.payloads": "core",
    # every path under the results folder, asked by the images too
    "orchestrator.store.layout": "core",
    # the host and owner a run record names, made by the runner
    "orchestrator.runs.hostinfo": "store",
    "orchestrator.runs.liveness": "store",
    "orchestrator.codegen": "parsers", "orchestrator.codegen.collect": "images",
    "orchestrator.codegen.diff": "verdict", "orchestrator.codegen.targets": "verdict",
    "orchestrator.codegen.asm": "verdict", "orchestrator.codegen.table": "report",
    "orchestrator.codegen.html": "report", "orchestrator.codegen.workflow": "workflows",
}  # fmt: skip


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: payloads/microbench/ holds programs that run inside microbenchmark images (Kernel Tuner,
#: numpy there);
#: store/migrations/ holds Alembic's scripts, which Alembic loads (they import nothing of ours).
NOT_MODULES = (PACKAGE / "payloads" / "microbench", PACKAGE / "store" / "migrations")
MODULES = {
    _module_name(p): p
    for p in sorted(PACKAGE.rglob("*.py"))
    if not any(top in p.parents for top in NOT_MODULES)
}


def _imports(name: str) -> set[str]:
    """The project modules `name` imports (a `from pkg import sub` names the submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(module: str) -> int | None:
    placed = [prefix for prefix in PLACED if module == prefix or module.startswith(prefix + ".")]
    if placed:
        return LAYERS.index(PLACED[max(placed, key=len)])
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_module_imports() -> None:
    for name in MODULES:
        if name != "orchestrator.__main__":
            importlib.import_module(name)


def test_no_import_cycles() -> None:
    assert sum(map(len, GRAPH.values())) > 100  # the graph was read, not empty
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            pytest.fail("import cycle: " + " → ".join(cycle))
        if module in done:
            return
        for imported in sorted(GRAPH[module]):
            visit(imported, [*path, module])
        done.add(module)

    for module in sorted(GRAPH):
        visit(module, [])


def test_layers_import_only_downwards() -> None:
    wrong = [
        f"{module} ({LAYERS[_layer(module) or 0]}) imports {imported}"
        for module, imports in GRAPH.items()
        for imported in imports
        if _layer(module) is not None
        and _layer(imported) is not None
        and (_layer(imported) or 0) > (_layer(module) or 0)
    ]
    assert not wrong, "\n".join(wrong)


def _lines(pattern: str, outside: tuple[str, ...]) -> list[str]:
    regex = re.compile(pattern)
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for name, path in MODULES.items()
        if not name.startswith(outside)
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if regex.search(line)
    ]


def test_platform_names_are_compared_only_in_platforms() -> None:
    assert not _lines(r'[!=]= *["\'](rocm|cpu)["\']', ("orchestrator.platforms",))
    assert not _lines(r'[!=]= *["\'](local|slurm)["\']', ("orchestrator.runs.executors",))


def test_only_the_engine_talks_to_docker() -> None:
    docker_api = r"client\.(api|images|containers)\b|\b_raise_for_status\b|\bapi\._(get|url)\b"
    assert not _lines(docker_api, ("orchestrator.engine",))
    assert _lines(docker_api, ())  # the pattern does find the engine's calls
    assert not _lines(r"^\s*(import docker|from docker)", ("orchestrator.engine",))


def test_label_keys_are_spelled_only_in_provenance() -> None:
    assert not _lines(r'LABEL_PREFIX \+ ["\']', ("orchestrator.images.provenance",))
    assert not _lines(r'["\']gmxbench\.[a-z_]+["\']', ("orchestrator.images.provenance",))
    assert _lines(r'["\']gmxbench\.["\']', ())  # provenance's own prefix is found


def test_results_paths_are_spelled_only_in_the_layout() -> None:
    names = r"result|kernel_result|codegen|counters|systrace|scheduler|bandwidth|kernel|tune_\w+"
    spelled = (
        rf'["\'](({names})\.json|(std\w+|scheduler)\.log|run\.sh|runs\.sqlite|\.(asm|scheduler)'
        r'|\.gmxbench-\w+)["\']|/ *["\'](images|logs)["\']'
        r'|["\']\.(lock|codegen|rebuild)\.json["\']|-r\{|-r\(?\\d'
    )
    assert not _lines(spelled, ("orchestrator.store.layout",))
    assert _lines(spelled, ())  # the layout's own names are found


def test_only_the_cli_prints() -> None:
    writes = r"\bprint\(|sys\.std(out|err)\.write"
    # the codegen probe is a program run inside images: its stdout is its result
    assert not _lines(writes, ("orchestrator.cli", "orchestrator.payloads.codegen_probe"))
    assert _lines(writes, ())


def test_meaning_is_never_read_from_an_emoji() -> None:
    """A verdict's meaning is its `verdict.model.Direction`; its marker is `report.words`'."""
    assert not _lines(r'[!=]= *["\'](🚀|🐢|⚠|•)["\']', ())


def _emoji_strings(outside: tuple[str, ...]) -> list[str]:
    """String constants (not docstrings) holding a marker, in modules outside `outside`."""
    found = []
    for name, path in MODULES.items():
        if name.startswith(outside):
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and any(marker in node.value for marker in "🚀🐢⚠")
        ]
    return found


def test_markers_are_words_of_the_report() -> None:
    """Verdicts are numbers; their markers are spelled where words are made (`report/`, the
    codegen page beside it, the console's fallback)."""
    words = ("orchestrator.report", "orchestrator.codegen.html", "orchestrator.cli.encoding")
    assert not _emoji_strings(words)
    assert _emoji_strings(())  # the markers are found where they are made


def test_one_atomic_writer() -> None:
    """Files are written atomically through `core.files` (which fsyncs), not by hand."""
    assert not _lines(r"\bmkstemp\(|\.write_text\(.*\.json", ("orchestrator.core.files",))


def test_request_options_are_declared_once() -> None:
    """A workflow request's options are its fields' (`workflows.options`); `cli.common`
    makes argparse's from them, so no command declares them again by hand."""
    flags = r"llvm|toolchain|package|against(-[a-z]+)?|from-build|steps|repeats|cpu-only|dry-run"
    declared = rf'(add_argument\(|^)\s*["\']--({flags}|threshold|alpha)["\']\s*[,)]'
    assert not _lines(declared, ("orchestrator.workflows",))
    assert _lines(declared, ())  # the pattern does find the declarations
