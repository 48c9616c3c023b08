"""`codegen diff BASELINE CANDIDATE`: which kernels two builds compiled differently, and how.

Each side is a GROMACS image (a tag or a build name) or a run (a run directory or id,
whose `codegen.json` is the codegen of the image it ran). An image's codegen is read from
the cache beside its lockfile, or collected from the image itself when there is none yet.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator import engine
from orchestrator.codegen import collect
from orchestrator.codegen.asm import ASM_KEPT, AsmDiffs, asm_diff, collect_asm_diffs, save_asm_diffs
from orchestrator.codegen.diff import CodegenDiff, target_view
from orchestrator.codegen.model import Codegen, KernelCode, load_codegen
from orchestrator.codegen.table import Format, render
from orchestrator.codegen.targets import (
    TargetsDiff,
    diff_targets,
    targets_line,
    verdict_note,
)
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution, Emit, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images import microbench, native, user_kernels
from orchestrator.images.gromacs import gromacs_ref, record_of
from orchestrator.images.provenance import ImageRecord
from orchestrator.images.user_kernels import UserProgram
from orchestrator.platforms.rocm.targets import detect_gpu_arch
from orchestrator.store.layout import CODEGEN_FILE, RESULT_FILE, codegen_path
from orchestrator.store.runstore import RunStore


@dataclass
class Side:
    """One side of a codegen diff: what it is, its codegen, and its image if known."""

    label: str
    codegen: Codegen
    image: ImageRecord | None


def image_codegen(
    client: Client | None, settings: Settings, ref: str, emit: Emit = ignore
) -> tuple[ImageRecord, Codegen]:
    """The record and codegen of GROMACS image `ref` (without an engine: native build
    `ref`): cached, or collected now and cached."""
    if client is None:
        return native_codegen(settings, ref, emit)
    image = engine.image(client, gromacs_ref(ref))
    if image is None:
        raise UserError(
            f"No GROMACS image {gromacs_ref(ref)} in the engine; `nox -s images` lists them."
        )
    record = record_of(image)
    cached = _cached(settings, record)
    if cached is not None:
        return record, cached
    emit(Message(f"fingerprinting the code of {record.tag}"))
    started = time.monotonic()
    codegen = collect.run_probe(client, image.id, record)
    collect.save(settings.results_dir, codegen, record.tag)
    emit(Message(f"codegen of {record.tag}: {len(codegen.kernels)} functions in "
                 f"{time.monotonic() - started:.1f} s"))  # fmt: skip
    return record, codegen


def native_codegen(settings: Settings, ref: str, emit: Emit) -> tuple[ImageRecord, Codegen]:
    """The record and codegen of native build `ref`, read by the probe on this host."""
    build = native.find(settings, ref)
    if build is None:
        raise UserError(f"No native build {ref} in {settings.native_root}.")
    cached = _cached(settings, build.record)
    if cached is not None:
        return build.record, cached
    emit(Message(f"fingerprinting the code of {build.prefix}"))
    codegen = native.codegen_of(build)
    collect.save(settings.results_dir, codegen, build.record.tag)
    return build.record, codegen


def _cached(settings: Settings, record: ImageRecord) -> Codegen | None:
    cached = codegen_path(settings.results_dir, record.tag)
    if cached.exists():
        codegen = load_codegen(cached)
        if codegen.build == record.tag:
            return codegen
    return None


def side(client: Client, settings: Settings, spec: str, emit: Emit = ignore) -> Side:
    """A run (its `codegen.json`, else its image) or an image, by name."""
    runs = RunStore(settings.results_dir)
    path = Path(spec) if Path(spec).is_dir() else runs.path(spec)
    if path.is_dir() and (path / RESULT_FILE).exists():
        copy = path / CODEGEN_FILE
        if copy.exists():
            return Side(path.name, load_codegen(copy), None)
        spec = RunStore.load(path).image.id
    record, codegen = image_codegen(client, settings, spec, emit)
    return Side(record.tag, codegen, record)


def codegen_diff(
    client: Client, settings: Settings, baseline: str, candidate: str, emit: Emit = ignore
) -> tuple[Side, Side, TargetsDiff]:
    """Both sides and their code compared on every target either build holds."""
    one, two = side(client, settings, baseline, emit), side(client, settings, candidate, emit)
    if one.codegen.platform != two.codegen.platform:
        raise UsageError(
            f"{one.label} is a {one.codegen.platform} build and {two.label} a "
            f"{two.codegen.platform} one: their code cannot be compared kernel by kernel."
        )
    return one, two, diff_targets(one.codegen, two.codegen)


def diff_report(
    baseline: Side, candidate: Side, targets: TargetsDiff, *, arch: str | None = None,
    host: str | None = None, fmt: Format = "simple", limit: int = 40, kernel: str | None = None,
) -> tuple[CodegenDiff, str]:  # fmt: skip
    """`codegen diff`'s text, and the diff it lists: a code-object version difference
    first, the sides, every target's summary (several targets), then the changed kernels
    (only those whose name matches `kernel`) of `arch`, else of the verdict's target."""
    result = targets.target(arch) if arch else verdict_diff(targets, candidate.image, host)
    if kernel:
        wanted = _regex(kernel)
        kept = [k for k in result.changed if wanted.search(k.demangled or k.name)]
        result = result.model_copy(update={"changed": kept})
    note = result.code_object_note()
    lines = [note] if note else []  # first: it may explain every difference below
    lines += [f"baseline: {baseline.label}", f"candidate: {candidate.label}"]
    if targets.several:
        which = f"{result.arch} (--arch)" if arch else verdict_note(result)
        lines.append(f"per target: {targets_line(result)}")
        lines.append(f"kernels below: {which}; --arch TARGET lists another target's")
    return result, "\n".join(lines) + "\n" + render(result, fmt, limit, note=False)


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"--kernel {pattern!r} is not a regular expression: {exc}.") from None


def host_target() -> str | None:
    """This host's GPU target (None: no GPU here), which a verdict's code is of."""
    return detect_gpu_arch()


def verdict_diff(
    targets: TargetsDiff, candidate: ImageRecord | None = None, host: str | None = None
) -> CodegenDiff:
    """The diff of the target a timing verdict is of: `host` (this host's GPU where
    either build holds it), else the first of the candidate image's `gpu_arch` list both
    hold, else the builds' primary target; every target's summary rides along."""
    preferred = candidate.gpu_archs if candidate is not None else []
    return targets.for_verdict(host, preferred)


def kernel_asm_diffs(
    client: Client, settings: Settings, baseline: Side, candidate: Side, result: CodegenDiff,
    pattern: str,
) -> list[str]:  # fmt: skip
    """Unified diffs of the changed kernels whose name matches `pattern` (both images)."""
    wanted = _regex(pattern)
    images = [s.image for s in (baseline, candidate)]
    if any(image is None for image in images):
        raise UsageError(
            "--asm needs both sides' images (a run's copy of codegen.json holds no code): "
            "give the images, e.g. `codegen diff <baseline build> <candidate build> --kernel "
            "… --asm`."
        )
    out = []
    views = [_view(s.codegen, result) for s in (baseline, candidate)]
    for delta in result.changed:
        one, two = views[0].kernels[delta.key], views[1].kernels[delta.key]
        if not wanted.search(one.demangled or one.name):
            continue
        texts = [
            collect.function_asm(client, image, kernel.name, kernel.unit, kernel.arch)  # type: ignore[arg-type]
            for image, kernel in zip(images, (one, two), strict=True)
        ]
        labels = [f"{baseline.label} {one.name}", f"{candidate.label} {two.name}"]
        out.append(asm_diff(*texts, *labels))
    if not out:
        raise UsageError(f"No changed kernel matches --kernel {pattern!r}.")
    return out


def builds_codegen(
    client: Client | None, settings: Settings, baseline: ImageRecord, candidate: ImageRecord,
    emit: Emit = ignore,
) -> CodegenDiff | None:  # fmt: skip
    """The codegen diff of two builds for a timing verdict; None for an A/A comparison or
    when a codegen cannot be had (said, not fatal: the timing verdict stands alone)."""
    if baseline.id == candidate.id:
        return None
    try:
        _, one = image_codegen(client, settings, baseline.tag, emit)
        _, two = image_codegen(client, settings, candidate.tag, emit)
    except UserError as exc:
        emit(Caution(f"no codegen summary: {exc.message}"))
        return None
    return verdict_diff(diff_targets(one, two), candidate, host_target())


def kernels_codegen(
    client: Client,
    settings: Settings,
    baseline: ImageRecord,
    candidate: ImageRecord,
    program: UserProgram,
    emit: Emit = ignore,
) -> CodegenDiff | None:
    """The codegen diff of a user's kernel as two builds' compilers made it (their
    microbenchmark images, built now if missing; the runs find them again), on the
    verdict's target; None for an A/A comparison or when a codegen cannot be had (said,
    not fatal)."""
    if baseline.id == candidate.id:
        return None
    try:
        one, two = (
            user_kernels.kernel_codegen(client, microbench.ensure(client, settings, side.tag,
                                                               program, emit))
            for side in (baseline, candidate)
        )  # fmt: skip
    except UserError as exc:
        emit(Caution(f"no codegen summary: {exc.message}"))
        return None
    return verdict_diff(diff_targets(one, two), candidate, host_target())


def runs_codegen(baseline: Path, candidate: Path) -> CodegenDiff | None:
    """The codegen diff of the images two runs ran, from the runs' own copies (which
    hold every target), on the target the timings are of: the GPU the candidate run
    recorded where a build holds it, else the first target both builds hold, the
    baseline's order first."""
    copies = [path / CODEGEN_FILE for path in (baseline, candidate)]
    if not all(copy.exists() for copy in copies):
        return None
    one, two = (load_codegen(copy) for copy in copies)
    if one.build == two.build or one.platform != two.platform:
        return None
    return verdict_diff(diff_targets(one, two), host=run_target(candidate))


def run_target(run_dir: Path) -> str | None:
    """The GPU target a stored run recorded (None: a CPU run, or one recorded before
    targets were)."""
    try:
        return RunStore.load(run_dir).host.gpu_target
    except UserError:
        return None


def _view(codegen: Codegen, result: CodegenDiff) -> Codegen:
    """`codegen`'s kernels of the diff's target, keyed as the diff keys them."""
    return codegen if result.arch is None else target_view(codegen, result.arch)


def keep_asm_diffs(
    client: Client, settings: Settings, baseline: ImageRecord, candidate: ImageRecord,
    result: CodegenDiff | None, groups: tuple[str, str], emit: Emit = ignore,
) -> AsmDiffs | None:  # fmt: skip
    """Save a bench's changed kernels' code diffs beside its runs, for `report --html`
    (the images may be gone by then); None when no kernel's code changed."""
    if result is None or not result.changed:
        return None
    started = time.monotonic()
    try:
        sides = [image_codegen(client, settings, image.tag, emit)[1]
                 for image in (baseline, candidate)]  # fmt: skip
    except UserError as exc:
        emit(Caution(f"the changed kernels' code is not kept for the report: {exc.message}"))
        return None
    images = (baseline, candidate)
    wanted: dict[str | None, list[str]] = {}  # unit -> the names the report can keep
    for delta in result.changed[:ASM_KEPT]:
        wanted.setdefault(delta.unit, []).append(delta.name)
    texts: dict[tuple[int, str | None], dict[str, str]] = {}

    def code(side: int, kernel: KernelCode) -> str:
        """One probe per unit and side prints all of the unit's wanted kernels at once."""
        unit = kernel.unit
        if (side, unit) not in texts:
            names = wanted.get(unit) or [kernel.name]
            texts[side, unit] = collect.functions_asm(
                client, images[side], names, unit, kernel.arch
            )
        if kernel.name not in texts[side, unit]:
            raise UserError(f"{kernel.name} is not exactly once in {unit} of {images[side].tag}")
        return texts[side, unit][kernel.name]

    record = collect_asm_diffs(
        result, _view(sides[0], result), _view(sides[1], result), code, groups, emit=emit
    )
    save_asm_diffs(settings.results_dir, record)
    emit(Message(f"kept the code diffs of {len(record.kernels)} changed kernels for the "
                 f"report in {time.monotonic() - started:.1f} s"))  # fmt: skip
    return record
