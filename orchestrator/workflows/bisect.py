"""`bisect`: which LLVM commit made a metric slower, by `git bisect` and the bench's verdicts.

Git chooses the commits (in a worktree of `ORCH_LLVM_SOURCE` made without checking files
out, so the user's checkout and any bisect of their own are untouched); each step is a
`bench` of that commit against the good one (toolchain and binaries from the caches,
interleaved pairs), and the verdict is read on the slowdown the bad end showed:

- the bad end is measured first; unless it is slower beyond the threshold there is
  nothing to bisect, and the bisect says so instead of chasing noise;
- a step is *bad* when the interval of its slowdown lies above the geometric midpoint of
  the good and bad ends, *good* when below it, and *untestable* otherwise: it is measured
  again with twice the pairs, then skipped if still undecided; the slowdown, its interval
  and the midpoint are all the paired verdict's one statistic, the geometric mean of the
  pair ratios;
- pairs run in ABBA order, which cancels a linear drift only over an even number of
  pairs: an odd `--repeats` is rounded up, and said;
- a commit whose code is byte-identical to a commit already measured (the good end
  included: its build is every step's baseline) takes that commit's verdict without
  runs, "code identical to <commit>": kernel images by their programs' normalised code
  (`microbench.code_identity`), GROMACS builds by the codegen fingerprint's per-kernel hashes;
- a commit whose toolchain or binaries do not build is `git bisect skip`, not a verdict.

Every step is written to the results database as it ends (`history`, `report --html`).
"""

from __future__ import annotations

import hashlib
import math
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import update

from orchestrator.codegen.workflow import image_codegen
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution, Emit, Message, Step, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import BuildFailed, Client
from orchestrator.images import microbench
from orchestrator.images.gitsource import display_source, git, is_url, refuse_option
from orchestrator.images.gromacs import build_gromacs
from orchestrator.report import words
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import load_system
from orchestrator.store.database import Database, bisect_steps, bisects
from orchestrator.store.layout import group_of
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.history import Bisect, BisectStep, BisectVerdict
from orchestrator.verdict.model import Direction, Verdict
from orchestrator.verdict.paired import MIN_PAIRS, repeat_plan
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.bench_plan import PlanLine, check_numbers, run_seconds
from orchestrator.workflows.build import CompilerSpec, toolchain_for
from orchestrator.workflows.options import (
    ALPHA,
    CPU_ONLY,
    DRY_RUN,
    REPEATS,
    STEPS,
    SYSTEM,
    THRESHOLD,
    as_pairs,
    option,
)
from orchestrator.workflows.placement import AUTO


@dataclass
class BisectRequest:
    """The two ends and how each step is measured and judged; each field declares its
    `bisect` option (`workflows.options`), in the order `--help` lists them."""

    good: str = option(required=True, help="an LLVM commit that is not slower")
    bad: str = option(required=True, help="a later LLVM commit that is slower")
    system: str | None = option(SYSTEM, help="recipe system (a kernel recipe builds fastest)")
    #: ns/day, a category, or a kernel recipe's metric; None: the system's headline.
    metric: str | None = option(flag="--category", help="ns/day, a category or a recipe metric")
    #: Interleaved pairs per step, even (an odd number is rounded up).
    repeats: int | str = option(REPEATS, type=as_pairs, default=6, help="interleaved pairs "
                                "per step, even (twice if undecided)")  # fmt: skip
    steps: int | None = option(STEPS)
    cpu_only: bool = option(CPU_ONLY, help="GPU builds on the host CPU only")
    #: Print the plan (steps, runs, times); build nothing.
    dry_run: bool = option(DRY_RUN, help="print the plan (steps, runs, times); build nothing")
    threshold_pct: float = option(THRESHOLD)
    alpha: float = option(ALPHA)


@dataclass
class BisectOutcome:
    """The bisect as recorded, and the verdict of the step that found the first bad commit."""

    record: Bisect
    first_bad: Comparison | None = None


@dataclass
class _Measured:
    verdict: BisectVerdict
    comparison: Comparison
    measure: Verdict  # of the metric bisected
    slowdown: float  # candidate over good, > 1 is slower
    code: str | None = None  # the commit's code identity, when it has one


@dataclass
class _Known:
    """A commit whose code was measured (or is the good end): what an identical one gets."""

    commit: str
    verdict: BisectVerdict
    comparison: Comparison | None


def even_pairs(repeats: int | str) -> int | str:
    """`repeats` with its number of pairs (or its most, for `auto:MAX`) rounded up to even."""
    plan = repeat_plan(repeats)
    if plan.most % 2 == 0:
        return repeats
    return plan.most + 1 if not plan.adaptive else f"auto:{plan.most + 1}"


@dataclass
class Checked:
    """A bisect's request with its fixes said, its checkout and its two ends' hashes."""

    request: BisectRequest
    notes: list[str]
    source: Path
    good: str
    bad: str


def check(settings: Settings, req: BisectRequest) -> Checked:
    """Every option, the system, the checkout and both commits, in seconds and without
    the engine: a mistake is said before the first LLVM build, never after it."""
    check_numbers(steps=req.steps, threshold_pct=req.threshold_pct, alpha=req.alpha)
    if req.system != AUTO:
        load_system(req.system, settings.recipes_dirs)  # an unknown system names the known
    source = _checkout(settings.llvm_source)
    notes = []
    plan = repeat_plan(req.repeats)
    if not plan.adaptive and plan.most < MIN_PAIRS:
        notes.append(f"--repeats {req.repeats}: 4 pairs instead (a verdict needs at least "
                     f"{MIN_PAIRS} pairs)")  # fmt: skip
        req = replace(req, repeats=4)
    pairs = even_pairs(req.repeats)
    if pairs != req.repeats:
        notes.append(f"--repeats {req.repeats}: {pairs} pairs instead (ABBA order cancels a "
                     "linear drift only over an even number of pairs)")  # fmt: skip
        req = replace(req, repeats=pairs)
    good, bad = _commit(source, req.good), _commit(source, req.bad)
    if git(["merge-base", "--is-ancestor", good, bad], cwd=source, check=False).returncode:
        raise UsageError(
            f"--good {req.good} is not an ancestor of --bad {req.bad} in {source}: git bisect "
            "needs the good commit in the bad one's history. Swap them, or pick the merge-base."
        )
    return Checked(req, notes, source, good, bad)


def plan_lines(settings: Settings, checked: Checked) -> list[PlanLine]:
    """`bisect --dry-run`: how many steps, and what each one costs here."""
    count = git(["rev-list", "--count", f"{checked.good}..{checked.bad}"], cwd=checked.source)
    commits = int(count.stdout.decode().strip() or 0)
    steps = math.ceil(math.log2(commits + 1))  # the bad end first, then halves
    req = checked.request
    rp = repeat_plan(req.repeats)
    lines = [PlanLine(f"{commits} commit{'s' if commits != 1 else ''} after --good: about "
                      f"{steps} step{'s' if steps != 1 else ''}, each an LLVM build, a build "
                      "for the system, and its pairs", None,
                      "the bad end first, then git bisect halves the range")]  # fmt: skip
    system = load_system(req.system, settings.recipes_dirs).name if req.system != AUTO else None
    each = run_seconds(settings, system, req.steps) if system else None
    if each is None:
        lines.append(PlanLine(f"{rp.first} pairs a step", None, "no estimate: never run here"))
    else:
        seconds, basis = each
        lines.append(PlanLine(f"{steps} steps × {rp.first} pairs ({2 * rp.first} runs) on "
                              f"{system}", steps * 2 * rp.first * seconds, basis))  # fmt: skip
    return lines


def bisect(
    client: Client, settings: Settings, req: BisectRequest | Checked, emit: Emit = ignore
) -> BisectOutcome:
    """Bisect `good..bad` in `settings.llvm_source`; every step lands in the database."""
    checked = req if isinstance(req, Checked) else check(settings, req)
    for note in checked.notes:
        emit(Message(note))
    req, source, good, bad = checked.request, checked.source, checked.good, checked.bad
    started = datetime.now(UTC)
    record = Bisect(
        bisect_id=f"bisect-{started:%Y%m%d-%H%M%S}-{good[:8]}-{bad[:8]}",
        good=good, bad=bad, system=req.system or "", metric=req.metric or "",
        started=started.isoformat(), outcome="running",
    )  # fmt: skip
    db = Database.of(settings)
    _save(db, record)
    verdicts: dict[str, Comparison] = {}
    try:
        _search(client, settings, req, record, source, db, verdicts, emit)
    except BaseException as exc:  # a failed run, the engine, Ctrl-C: the record says so
        why = exc.message if isinstance(exc, UserError) else type(exc).__name__
        _end(db, record, None, f"stopped: {why}")
        raise
    return BisectOutcome(record, verdicts.get(record.first_bad or ""))


def _search(
    client: Client, settings: Settings, req: BisectRequest, record: Bisect, source: Path,
    db: Database, verdicts: dict[str, Comparison], emit: Emit,
) -> Bisect:  # fmt: skip
    """The bad end first, then git's steps; `verdicts` collects each bad step's comparison."""
    good, bad = record.good, record.bad
    emit(Step(f"{record.bisect_id}: is {bad[:12]} slower than {good[:12]}?"))
    first = _measure(client, settings, req, record, bad, None, emit)
    record.system = first.comparison.system
    record.metric = req.metric or first.comparison.headline_name
    _step(db, record, bad, first, "bad end")
    if first.verdict != "bad" or first.slowdown <= 1:
        return _end(db, record, None, f"{bad[:12]} is not slower than {good[:12]} "
                    f"({words.note(first.measure)}): nothing to bisect")  # fmt: skip
    midpoint = math.sqrt(first.slowdown)
    known: dict[str, _Known] = {}
    for end in (_Known(good, "good", None), _Known(bad, "bad", first.comparison)):
        code = _code(client, settings, req, end.commit, emit)
        if code is not None:
            known.setdefault(code, end)
    emit(Message(f"the bad end is {100 * (first.slowdown - 1):.1f}% slower; a step is bad above "
                 f"{100 * (midpoint - 1):.1f}% (the geometric midpoint)"))  # fmt: skip
    worktree = settings.cache_dir / "bisect" / record.bisect_id
    worktree.parent.mkdir(parents=True, exist_ok=True)
    git(["worktree", "add", "--detach", "--no-checkout", str(worktree), bad], cwd=source)
    try:
        _bisect_git(worktree, "bisect", "start", "--no-checkout", bad, good)
        while True:
            commit = _bisect_git(worktree, "rev-parse", "BISECT_HEAD").strip()
            emit(Step(f"step {len(record.steps)}: {commit[:12]}"))
            verdict = _classify(
                client, settings, req, record, commit, midpoint, db, verdicts, known, emit
            )
            out = _bisect_git(worktree, "bisect", verdict)
            if "is the first bad commit" in out:
                return _end(db, record, out.split()[0], "found")
            if "only 'skip'ped commits left" in out:
                left = [w for w in out.split() if len(w) == 40]
                return _end(db, record, None, "only skipped commits left; the first bad is one "
                            f"of {', '.join(c[:12] for c in left)}")  # fmt: skip
    finally:
        git(["bisect", "reset"], cwd=worktree, check=False)
        git(["worktree", "remove", "--force", str(worktree)], cwd=source, check=False)
        shutil.rmtree(worktree, ignore_errors=True)


def _classify(
    client: Client, settings: Settings, req: BisectRequest, record: Bisect, commit: str,
    midpoint: float, db: Database, verdicts: dict[str, Comparison], known: dict[str, _Known],
    emit: Emit,
) -> BisectVerdict:  # fmt: skip
    """Good, bad or skip for one commit: the verdict of a commit with the same code, else
    measured, then measured again if undecided."""
    try:
        code = _code(client, settings, req, commit, emit)
    except BuildFailed as exc:
        _step(db, record, commit, None, f"does not build: {_first_error(exc.message)}")
        return "skip"
    same = known.get(code) if code is not None else None
    if same is not None:
        emit(Message(f"{commit[:12]}: code identical to {same.commit[:12]}, {same.verdict} "
                     "without runs"))  # fmt: skip
        _step(db, record, commit, None, f"code identical to {same.commit}", same.verdict)
        if same.verdict == "bad" and same.comparison is not None:
            verdicts[commit] = same.comparison
        return same.verdict
    for attempt, pairs in enumerate((req.repeats, _twice(req.repeats))):
        try:
            measured = _measure(client, settings, replace(req, repeats=pairs), record, commit,
                                midpoint, emit)  # fmt: skip
        except BuildFailed as exc:
            _step(db, record, commit, None, f"does not build: {_first_error(exc.message)}")
            return "skip"
        if measured.verdict != "undecided":
            _step(db, record, commit, measured, "")
            if measured.verdict == "bad":
                verdicts[commit] = measured.comparison
            if code is not None:
                known.setdefault(code, _Known(commit, measured.verdict, measured.comparison))
            return measured.verdict
        if attempt == 1:
            measured.verdict = "skip"
        why = "measured again with twice the pairs" if attempt == 0 else "still undecided: skipped"
        _step(db, record, commit, measured, why)
    return "skip"


def _measure(
    client: Client, settings: Settings, req: BisectRequest, record: Bisect, commit: str,
    midpoint: float | None, emit: Emit,
) -> _Measured:  # fmt: skip
    """A bench of `commit` against the good commit; `midpoint` None: is it slower at all."""
    tag = f"{record.bisect_id.removeprefix('bisect-')}-s{len(record.steps)}"
    outcome = bench(client, settings, BenchRequest(
        candidate=CompilerSpec("llvm", commit), baseline=CompilerSpec("llvm", record.good),
        system=req.system, tag=tag, steps=req.steps, repeats=req.repeats, cpu_only=req.cpu_only,
        threshold_pct=req.threshold_pct, alpha=req.alpha, measure_anyway=True,
    ), emit)  # fmt: skip
    cmp = outcome.comparison
    assert cmp is not None  # measure_anyway: always measured
    v = _verdict(cmp, req.metric)
    slowdown = _slowdown(v, 1 + v.delta_pct / 100)  # paired: the geometric mean of ratios
    if midpoint is None:
        return _Measured("bad" if v.direction is Direction.SLOWER else "good", cmp, v, slowdown)
    if v.ci_low is None or v.ci_high is None:
        return _Measured("undecided", cmp, v, slowdown)
    low, high = sorted((_slowdown(v, v.ci_low), _slowdown(v, v.ci_high)))
    verdict: BisectVerdict = "bad" if low > midpoint else "good" if high < midpoint else "undecided"
    return _Measured(verdict, cmp, v, slowdown)


def _code(
    client: Client, settings: Settings, req: BisectRequest, commit: str, emit: Emit
) -> str | None:
    """The identity of the code `commit`'s compiler makes for the system (its toolchain and
    image from the caches, as the bench of it would build them); None when it has none."""
    system = load_system(req.system, settings.recipes_dirs)
    tag = toolchain_for(client, settings, CompilerSpec("llvm", commit), emit=emit)
    assert tag is not None, commit
    if isinstance(system, ResolvedMicrobench):
        image = microbench.ensure(client, settings, tag, system.program, emit)
        return microbench.code_identity(client, image, system.program)
    record = build_gromacs(client, settings, "dev", toolchain_tag=tag, emit=emit)
    try:
        _, codegen = image_codegen(client, settings, record.tag, emit)
    except UserError as exc:
        emit(Caution(f"{commit[:12]} has no code identity, so it is measured: {exc.message}"))
        return None
    lines = sorted(f"{k.unit} {k.arch} {k.name} {k.sha256}\n" for k in codegen.kernels.values())
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _slowdown(v: Verdict, ratio: float) -> float:
    """Candidate over baseline as a slowdown: > 1 is slower, whichever way is better."""
    return 1 / ratio if v.higher_is_better else ratio


def _verdict(cmp: Comparison, metric: str | None) -> Verdict:
    """The verdict on the metric bisected: the headline unless another is named."""
    if metric in (None, cmp.headline_name):
        return cmp.headline
    found = cmp.categories.get(metric or "") or cmp.metrics.get(metric or "")
    if found is None:
        known = [cmp.headline_name, *cmp.categories, *cmp.metrics]
        raise UsageError(
            f"--category {metric}: the runs of {cmp.system} do not measure it. Pick one of: "
            f"{', '.join(known)}."
        )
    return found


def _first_error(message: str) -> str:
    """The compiler's first error in a failed build's message, else its first sentence."""
    errors = [line.strip() for line in message.splitlines() if "error:" in line]
    return errors[0][:200] if errors else message.split(":")[0][:200]


def _twice(repeats: int | str) -> int | str:
    return repeats * 2 if isinstance(repeats, int) else repeats


def _checkout(source: str) -> Path:
    path = Path(source).expanduser()
    if is_url(source) or not path.is_dir():
        raise UsageError(
            "bisect needs a local llvm-project checkout, and ORCH_LLVM_SOURCE is "
            f"{display_source(source)!r}. "
            "Clone it (git clone https://github.com/llvm/llvm-project) and set "
            "ORCH_LLVM_SOURCE to its path."
        )
    return Path(git(["rev-parse", "--show-toplevel"], cwd=path).stdout.decode().strip())


def _commit(source: Path, rev: str) -> str:
    refuse_option(rev, "The commit", "Give a commit hash, a branch or a tag.")
    at = f"{rev}^{{commit}}"
    found = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", at], cwd=source, check=False
    )
    if found.returncode:
        raise UsageError(f"{rev!r} is not a commit in {source}. Check the hash, or fetch it.")
    return found.stdout.decode().strip()


def _bisect_git(worktree: Path, *args: str) -> str:
    done = git(list(args), cwd=worktree, check=False)
    out = (done.stdout + done.stderr).decode(errors="replace")
    if done.returncode not in (0, 2) or (done.returncode == 2 and "skip" not in out):
        raise UsageError(f"git {' '.join(args)} failed in {worktree}: {out.strip()[-400:]}")
    return out


def _save(db: Database, record: Bisect) -> None:
    row = record.model_dump(exclude={"steps"})
    with db.begin() as conn:
        conn.execute(bisects.insert().values(**row))


def _step(
    db: Database, record: Bisect, commit: str, measured: _Measured | None, note: str,
    verdict: BisectVerdict = "skip",
) -> None:  # fmt: skip
    step = BisectStep(
        step=len(record.steps), commit=commit, verdict=verdict, note=note,
        at=datetime.now(UTC).isoformat(),
    )  # fmt: skip
    if measured is not None:
        cmp, v = measured.comparison, measured.measure
        step = step.model_copy(update={
            "verdict": measured.verdict,
            "baseline_group": group_of(cmp.baseline[0]),
            "candidate_group": group_of(cmp.candidate[0]),
            "delta_pct": v.delta_pct, "p_value": v.p_value, "pairs": v.n_candidate,
            "note": "; ".join(x for x in (note, words.note(v)) if x),
        })  # fmt: skip
    record.steps.append(step)
    with db.begin() as conn:
        conn.execute(bisect_steps.insert().values(bisect_id=record.bisect_id, **step.model_dump()))


def _end(db: Database, record: Bisect, first_bad: str | None, outcome: str) -> Bisect:
    record.first_bad, record.outcome = first_bad, outcome
    with db.begin() as conn:
        conn.execute(
            update(bisects).where(bisects.c.bisect_id == record.bisect_id)
            .values(**record.model_dump(exclude={"bisect_id", "steps"}))
        )  # fmt: skip
    return record
