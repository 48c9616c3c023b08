"""Map GPU kernel names and md.log cycle-accounting rows to a few comparable categories.

Categories: ``nbnxm, pme_spread, fft, pme_solve, pme_gather, memory, other``.

Kernel names (rocprofv3 / legacy rocprof; HIP upstream 2025-2026 and the 2026 HIP fork,
the older ROCm/Gromacs fork, CUDA, SYCL, OpenCL) are reduced to their *base identifier*
before matching, so demangled (``void gmx::nbnxmKernel<...>(...)``), mangled
(``_ZN3gmxL11nbnxmKernelI...``, ``... .kd``), truncated (``-T``) and legacy
(``... [clone .kd]``) spellings all match the same rule; an ``(anonymous namespace)`` scope
is skipped and a name the profiler cut inside its template arguments is cut at the first
unmatched ``<``, so the base identifier is never empty. If the base identifier matches
no rule and the name is mangled, every other identifier in it is tried (SYCL kernel-name
types can hide inside local-entity typeinfo names). First match wins; a name that matches
no rule goes to ``other`` and is reported as *unknown*, so new kernels are noticed rather
than silently absorbed.

Judgement calls:

* X buffer ops (``nbnxmKernelTransformXToXq``, CUDA/fork ``nbnxn_gpu_x_to_nbat_x_kernel``,
  SYCL ``NbnxmKernelTransformXToXqName``) count as ``nbnxm``, matching the CPU row
  ``NB X/F buffer ops.`` (rocm-gromacs.md put the CUDA one in ``memory``; we keep one rule).
* Pair-list pruning and sorting (``...PruneOnly``, ``...BucketSciSort``, the rocPRIM/CUB
  device-scan kernels GROMACS launches only for the sci sort) and the fork's energy
  reduction ``nbnxmKernelSumUp`` count as ``nbnxm``; FEP kernels (``nbfe*``) too.
* rocPRIM scans: GROMACS's only rocPRIM call is one ``exclusive_scan`` of ``int`` (the
  sci-sort histogram, ``nbnxm_hip_data_mgmt.cpp``). rocPRIM >= 4 (ROCm 7) launches it as
  ``trampoline_kernel<..., launch_lookback_scan<...>>`` (or ``launch_single_scan``), older
  rocPRIM as ``lookback_scan_kernel`` / ``single_scan_kernel``: all ``nbnxm``. Their
  ``init_lookback_scan_state_kernel`` is ``nbnxm`` only for an ``int`` scan state; the same
  init kernel also serves rocPRIM partition/select (``unsigned``/``size_t``/tuple offset
  states), which stays unknown rather than being counted as pair-list work. These are
  :data:`CONTEXT_RULES`: they look at template arguments, not just the base name.
* Profiler rows that are no kernel (legacy rocprof's ``<barrier packet>`` and
  ``Unknown command type``, any ``<...>`` placeholder) are :data:`NOT_A_KERNEL`: kept in
  the breakdown's ``excluded`` list, never in a category.
* ``pmegrid_to_fftgrid`` / SYCL ``GridConverter`` (layout copy) and PME halo packing are
  ``memory``, not ``fft``: they run compiler-built code, FFT kernels do not.
* Every FFT library kernel (VkFFT, rocFFT RTC and pre-RTC, cuFFT) is ``fft``; they are
  compiled at run time or shipped prebuilt, so ``fft`` is a compiler-independent control.
* ``__amd_rocclr_copy*`` / ``__amd_rocclr_fill*`` blits are ``memory``; other rocclr
  runtime kernels are known ``other``. Bonded, update, constraints, force reduction,
  halo exchange kernels are known ``other``.

CPU rows (``R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G``): ``Force`` →
``nbnxm`` when the nonbonded kernel ran on the CPU (it dominates the row, though the row
also holds bondeds), but → ``other`` when md.log shows the nonbonded work ran on a GPU
(``-nb gpu``, ``Wait GPU NB`` rows, GPU task assignment): the row is then bonded and other
CPU force work. ``NB X/F buffer ops.`` → ``nbnxm``, the PME breakdown rows → their PME
category, ``PME 3D-FFT Comm.`` → ``fft``; everything else, including CPU waits for the
GPU, → ``other``. GROMACS <= 2016 times spread and gather in one ``PME spread/gather``
row: it goes to :data:`PME_SPREAD_GATHER`, outside the seven compared categories, so that
neither ``pme_spread`` nor ``pme_gather`` claims time it did not measure alone.
``PME mesh`` / ``PME GPU mesh`` are parents of the breakdown rows and ``Rest`` /
``Total`` are sums: see :func:`cycle_row_counted`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

CATEGORIES: tuple[str, ...] = (
    "nbnxm",
    "pme_spread",
    "fft",
    "pme_solve",
    "pme_gather",
    "memory",
    "other",
)

#: Category of profiler rows that are no kernel; they are listed, never summed.
NOT_A_KERNEL = "not_a_kernel"
#: The combined CPU row of GROMACS <= 2016; not one of :data:`CATEGORIES` (see docstring).
PME_SPREAD_GATHER = "pme_spread_gather"

_PSEUDO_KERNEL = re.compile(r"^<[^<>]*>$|^Unknown command type$")


class Rule(NamedTuple):
    """One row of the kernel table: category, regex on the base identifier, why."""

    category: str
    pattern: str
    note: str


# (category, regex, note). Applied with re.search to the base identifier; first match wins.
KERNEL_RULES: tuple[Rule, ...] = (
    Rule("pme_spread", r"(?i)^pme_?spline_?and_?spread", "HIP/CUDA/OpenCL/SYCL, fork"),
    Rule("pme_spread", r"(?i)^pme_?(spline|spread)(_?kernel)?$", "split spline / spread"),
    Rule("pme_gather", r"(?i)^pme_?gather", "HIP/CUDA/OpenCL/SYCL, fork"),
    Rule("pme_solve", r"(?i)^pme_?solve", "HIP/CUDA/OpenCL/SYCL (+ yzx/xyz variants)"),
    Rule(
        "memory",
        r"(?i)^pme_?grid_?to_?fft_?grid|^GridConverter|^pmeGpu(Pack|Unpack|UnpackAndAdd)Halo"
        r"|^(Pack|Unpack|UnpackAndAdd)Halo(External|Internal)",
        "PME grid layout copy and PME decomposition halos (before fft: name holds 'fft')",
    ),
    Rule("memory", r"^__amd_rocclr_(copy|fill)", "HIP runtime blit copy/fill"),
    Rule(
        "memory",
        r"(?i)^(pack_?send_?buf|unpack_?recv_?buf)(_?kernel)?$|^fusedPulsesPackXAndSendKernel"
        r"|^kernel_fill$|^memset_f[234]?$",
        "DD halo pack/unpack, fork kernel_fill, OpenCL memset",
    ),
    Rule("fft", r"^VkFFT_main", "VkFFT (hiprtc/nvrtc), all launches collapse here"),
    Rule(
        "fft",
        r"^fft_rtc_|^(transpose|bluestein|chirp)_rtc|^(r2c|c2r|c2herm|herm2c)_copy_rtc"
        r"|^r2c_even_post|^c2r_even_pre|^bluestein|^chirp|^transpose_kernel"
        r"|^real_(pre|post)_process|^(complex2hermitian|hermitian2complex)",
        "rocFFT RTC and pre-RTC kernels",
    ),
    Rule("fft", r"(?i)fft", "cuFFT (regular_fft, vector_fft, ...), other FFT libraries"),
    Rule(
        "nbnxm",
        r"^nbnx[nm]Kernel|^NbnxmKernel|^nbfe(Foreign)?Kernel|^nbnxn_kernel|^nbnxm_kernel"
        r"|^nbfe_(foreign_)?kernel|^nbnx[nm]_gpu_x_to_nbat_x|^zero_e_fshift$",
        "nonbonded, prune, sci sort (CUDA 2026: nbnxnKernelBucketSciSort), X->XQ, sum-up, FEP",
    ),
    Rule(
        "nbnxm",
        r"^(lookback|single)_scan_kernel$|^DeviceScan(Init)?Kernel",
        "rocPRIM < 4 / CUB device scan: only used for the GPU pair-list sci sort",
    ),
    Rule(
        "other",
        r"(?i)^bonded_?kernel(_gpu)?|^exec_kernel_gpu|^reduce_?kernel|^leap_?frog(_?kernel)?"
        r"|^lincs_?kernel|^settle_?kernel|^scale_?coordinates(_?kernel)?|^ScaleKernel"
        r"|^langevin_?kernel|^dummy_?kernel|^__amd_rocclr_",
        "known non-category kernels: bonded, update, constraints, reduction, runtime",
    ),
)

_COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rule.category, re.compile(rule.pattern)) for rule in KERNEL_RULES
)


class ContextRule(NamedTuple):
    """A rule for a generic wrapper kernel: base name and template arguments both match."""

    category: str
    base: str
    arguments: str
    note: str


# Checked before KERNEL_RULES; ``arguments`` is searched in the whole (clean) name, which
# holds the template arguments in demangled (``<...>``) or mangled (``I...E``) spelling.
CONTEXT_RULES: tuple[ContextRule, ...] = (
    ContextRule(
        "nbnxm",
        r"^trampoline_kernel$",
        r"\blaunch_(lookback|single)_scan\b|20launch_lookback_scan|18launch_single_scan",
        "rocPRIM >= 4 (ROCm 7) scan: the sci-sort exclusive scan",
    ),
    ContextRule(
        "nbnxm",
        r"^init_lookback_scan_state_kernel$",
        r"lookback_scan_state<int[,>]|19lookback_scan_stateIi",
        "init of an int scan state: the sci-sort scan (partition/select states differ)",
    ),
)

_CONTEXT: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (rule.category, re.compile(rule.base), re.compile(rule.arguments)) for rule in CONTEXT_RULES
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LEN_PREFIXED = re.compile(r"(?<!\d)(\d+)(?=[A-Za-z_])")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def strip_kernel_suffix(name: str, *, keep_descriptor: bool = False) -> str:
    """The name without what a profiler appended, so every spelling of a kernel compares equal.

    Legacy rocprof appends `` [clone .kd]``; rocprofv2 `` (.kd)`` and rocprofv3's
    ``--mangled-kernels`` ``.kd``, the kernel descriptor's symbol. ``keep_descriptor`` keeps
    those two, for a record that stores the name as the profiler spelled its symbol.
    """
    name = name.strip().removesuffix("[clone .kd]").rstrip()
    if keep_descriptor:
        return name
    return name.removesuffix("(.kd)").rstrip().removesuffix(".kd")


def _mangled_base(name: str) -> str | None:
    """Function name of an Itanium-mangled symbol (``_Z...``), or None if unparsable."""
    i = 2
    if name.startswith("T", i) and len(name) > i + 1 and name[i + 1] in "SI":
        i += 2  # typeinfo (name) of a type: SYCL kernel-name classes
    nested = name.startswith("N", i)
    if nested:
        i += 1
        while i < len(name) and name[i] in "rVKRO":
            i += 1
    base: str | None = None
    while i < len(name):
        if name.startswith("St", i):
            i += 2
            continue
        if name[i] == "L":
            i += 1
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        if j == i:
            break
        length = int(name[i:j])
        base = name[j : j + length]
        i = j + length
        if not nested:
            break
    return base or None


def _demangled_base(name: str) -> str:
    """``void gmx::nbnxmKernel<...>(args)`` → ``nbnxmKernel``.

    ``(anonymous namespace)`` is a scope, not the parameter list, and a name that the
    profiler truncated inside its template arguments keeps an unmatched ``<``: both are
    cut away before the identifier is taken.
    """
    text = name.replace("(anonymous namespace)", "anonymous_namespace")
    for _ in range(16):
        reduced = _TEMPLATE_ARGS.sub("", text)
        if reduced == text:
            break
        text = reduced
    head = text.split("(", 1)[0].split("<", 1)[0].strip() or text
    token = head.split()[-1] if head.split() else head
    return token.rsplit("::", 1)[-1]


def base_name(name: str) -> str:
    """The kernel's own identifier, whatever spelling the profiler used."""
    clean = strip_kernel_suffix(name)
    if clean.startswith("_Z"):
        return _mangled_base(clean) or clean
    return _demangled_base(clean)


def _identifiers(mangled: str) -> list[str]:
    """Every length-prefixed identifier of a mangled name (local entities, lambdas)."""
    found = []
    for m in _LEN_PREFIXED.finditer(mangled):
        start = m.end()
        ident = mangled[start : start + int(m.group(1))]
        if _IDENT.fullmatch(ident):
            found.append(ident)
    return found


def _match(identifier: str) -> str | None:
    for category, regex in _COMPILED:
        if regex.search(identifier):
            return category
    return None


def is_pseudo_kernel(name: str) -> bool:
    """True for profiler rows that are no kernel (``<barrier packet>``, ...)."""
    return _PSEUDO_KERNEL.match(name.strip().strip('"')) is not None


def _match_context(base: str, clean: str) -> str | None:
    for category, base_re, arguments in _CONTEXT:
        if base_re.search(base) and arguments.search(clean):
            return category
    return None


@lru_cache(maxsize=65536)
def classify(name: str) -> tuple[str, bool]:
    """``(category, known)``; ``known`` is False when only the catch-all matched.

    Pseudo-kernels give ``(NOT_A_KERNEL, True)``: known, and in no category.
    """
    if is_pseudo_kernel(name):
        return NOT_A_KERNEL, True
    base = base_name(name)
    clean = strip_kernel_suffix(name)
    category = _match_context(base, clean) or _match(base)
    if category is None and clean.startswith("_Z"):
        for ident in _identifiers(clean):
            if ident != base and (category := _match(ident)) is not None:
                break
    if category is None:
        return "other", False
    return category, True


def categorize(name: str) -> str:
    """Category of one kernel name (``other`` when no rule matches)."""
    return classify(name)[0]


# --- CPU cycle accounting (md.log) -------------------------------------------------------

# Exact row names (GROMACS 2021-2026 `wallcycle.cpp`), trailing " *" (PME-only rank) removed.
CYCLE_RULES: dict[str, str] = {
    "Force": "nbnxm",
    "Nonbonded": "nbnxm",
    "NB X/F buffer ops.": "nbnxm",
    "Nonbonded F kernel": "nbnxm",
    "Nonbonded pruning": "nbnxm",
    "PME spread": "pme_spread",
    "PME spline": "pme_spread",
    "PME spread/gather": PME_SPREAD_GATHER,
    "PME gather": "pme_gather",
    "PME 3D-FFT": "fft",
    "PME 3D-FFT Comm.": "fft",
    "PME solve Elec": "pme_solve",
    "PME solve LJ": "pme_solve",
    "PME solve": "pme_solve",
}

# Known rows that belong in `other` (so that only genuinely new rows are reported unknown).
KNOWN_OTHER_CYCLE_ROWS: frozenset[str] = frozenset(
    {
        "Run", "Step", "PP during PME", "Domain decomp.", "DD comm. load", "DD comm. bounds",
        "Vsite constr.", "Send X to PME", "Neighbor search", "Launch GPU ops.",
        "Launch PP GPU ops.", "Comm. coord.", "Wait + Comm. F", "PME redist. X/F",
        "Wait PME GPU D2H", "Wait PME GPU gather", "Reduce GPU PME F", "Launch PME GPU ops.",
        "Wait PME Recv. PP X", "Wait PME GPU spread", "Wait GPU FFT to PME",
        "PME Halo exch comm", "PME wait for PP", "Wait + Recv. PME F", "Wait Bonded GPU",
        "Wait GPU NB nonloc.", "Wait GPU NB local", "Wait GPU state copy", "Vsite spread",
        "COM pull force", "AWH", "Write traj.", "Update", "Constraints", "Comm. energies",
        "Enforced rotation", "Add rot. forces", "Position swapping", "IMD", "MD Graph",
        "Test", "Kinetic energy", "Comp. energies", "GPU constr. setup",
        "Inter-sim. signal.", "Wait GPU nonlocal", "Wait GPU local",
    }
)  # fmt: skip

# Parents and sums: never counted directly (see cycle_row_counted).
PME_PARENT_ROWS: frozenset[str] = frozenset({"PME mesh", "PME GPU mesh"})
SUM_ROWS: frozenset[str] = frozenset({"Rest", "Total"})


def _clean_row(name: str) -> str:
    name = name.strip()
    return name[:-1].rstrip() if name.endswith("*") else name


def categorize_cycle_row(name: str, nonbonded_on_gpu: bool = False) -> str:
    """Category of an md.log cycle-accounting row (``other`` for all unlisted rows).

    With the nonbonded work on a GPU, ``Force`` is the CPU's bonded and other force work,
    so it is ``other`` (see the module docstring).
    """
    clean = _clean_row(name)
    if nonbonded_on_gpu and clean == "Force":
        return "other"
    return CYCLE_RULES.get(clean, "other")


def cycle_row_known(name: str) -> bool:
    """True when the row is in one of the tables (so not a row this module never saw)."""
    clean = _clean_row(name)
    return (
        clean in CYCLE_RULES
        or clean in KNOWN_OTHER_CYCLE_ROWS
        or clean in PME_PARENT_ROWS
        or clean in SUM_ROWS
    )


def cycle_row_counted(name: str, section: str, has_pme_breakdown: bool) -> bool:
    """Whether a row enters the CPU breakdown without double counting.

    ``Rest``/``Total`` are sums, sub-counter rows (section ``pp``) are parts of main rows,
    and ``PME mesh`` is the parent of the PME breakdown rows, so it is only counted (as
    ``other``, its split being unknown) when the log has no breakdown.
    """
    clean = _clean_row(name)
    if section == "pp" or clean in SUM_ROWS:
        return False
    if clean in PME_PARENT_ROWS:
        return not has_pme_breakdown
    return True
