"""The codegen of a build: per kernel (GPU) or hot function (CPU), what code.

The probe (`payloads/codegen_probe.py`) runs inside the image and prints JSON;
:func:`parse_probe_output` turns it into a :class:`Codegen`, adding each function's
category (the same categorizer as kernel traces, or :data:`CPU_RULES` for x86 symbols)
and the occupancy: for AMDGPU kernels by LLVM's rules, for NVIDIA kernels the warps per
SM their registers allow (both :mod:`orchestrator.parsers.occupancy`). :func:`probe_argv`
builds the container command line. A Codegen is saved as ``codegen.json`` with the image.

Functions are keyed by mangled name; when one name occurs more than once (several
offload architectures, or an inline template kernel emitted by two units) the key gets
``@<arch>`` and then ``@<unit>``, so two builds of the same sources get the same keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.core.errors import UserError
from orchestrator.core.settings import CHOICES
from orchestrator.parsers.categories import base_name, classify
from orchestrator.parsers.occupancy import occupancy_detail, register_warps
from orchestrator.payloads import codegen_probe

__all__ = [
    "CPU_RULES",
    "CodeObject",
    "Codegen",
    "KernelCode",
    "category_of",
    "cpu_classify",
    "is_gpu_arch",
    "load_codegen",
    "parse_probe_output",
    "probe_argv",
    "probe_source",
]

SCHEMA_VERSION = 1

# CPU hot symbols -> category, on the function's base identifier (first match wins).
CPU_RULES: tuple[tuple[str, str], ...] = (
    ("nbnxm", r"^nbnx[nm]_kernel|^nbnxn_atomdata_add_nbat|^reduceForces$|^reduce_energies_over"),
    ("pme_spread", r"^spread_on_grid$|^spread_coefficients|^make_bsplines$"),
    ("pme_spread", r"^calc_interpolation_idx$|^(un)?wrap_periodic_pmegrid$"),
    ("pme_gather", r"^gather_f_bsplines$|^gather_energy_bsplines$"),
    ("pme_solve", r"^solve_pme(_lj)?_yzx$"),
    ("memory", r"^copy_(fft|pme)grid_to_(pme|fft)grid$"),
    ("fft", r"^gmx_fft_|^gmx_parallel_3dfft|^fft5d_|^fftwf?_|3[dD][fF]ft"),
    ("other", r"(?i)update_?md|leap_?frog|settle|lincs"),
)
_CPU_COMPILED = tuple((cat, re.compile(pattern)) for cat, pattern in CPU_RULES)


class KernelCode(BaseModel):
    """One GPU kernel / device function, or one x86 function, of a build."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str  # mangled
    demangled: str | None = None
    kind: Literal["kernel", "function"]
    category: str
    category_known: bool
    unit: str  # source unit (object path without CMake's dir), or the library for CPU
    arch: str  # gfx1201, sm_90, x86_64
    code_object: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # of the normalised instruction text
    instructions: int = Field(ge=0)
    classes: dict[str, int]
    vgprs: int | None = None
    sgprs: int | None = None
    agprs: int | None = None
    vgpr_spills: int | None = None
    sgpr_spills: int | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None
    wavefront_size: int | None = None
    max_flat_workgroup_size: int | None = None
    wgp_mode: bool | None = None
    dynamic_stack: bool | None = None
    # NVIDIA (cuobjdump -res-usage): per thread, and shared per block
    registers: int | None = None
    stack_bytes: int | None = None  # the call stack frame, where ptxas spills registers
    local_bytes: int | None = None  # local memory outside the stack frame
    shared_bytes: int | None = None  # static shared memory
    constant_bytes: int | None = None  # constant bank 0: parameters and driver words
    #: AMDGPU: waves per SIMD by LLVM's rules; NVIDIA: warps per SM by registers alone
    occupancy: int | None = None
    occupancy_limiter: str | None = None  # vgprs, sgprs, lds, registers or none

    @property
    def spills(self) -> int | None:
        """AMDGPU spill counts; None where the notes give none (NVIDIA: see stack)."""
        if self.vgpr_spills is None and self.sgpr_spills is None:
            return None
        return (self.vgpr_spills or 0) + (self.sgpr_spills or 0)

    @property
    def thread_registers(self) -> int | None:
        """Registers per thread: AMDGPU VGPRs, NVIDIA registers."""
        return self.vgprs if self.registers is None else self.registers

    @property
    def group_bytes(self) -> int | None:
        """Static memory per workgroup/block: AMDGPU LDS, NVIDIA shared memory."""
        return self.lds_bytes if self.shared_bytes is None else self.shared_bytes

    @property
    def private_bytes(self) -> int | None:
        """Memory per thread: AMDGPU scratch, NVIDIA stack frame plus local memory."""
        if self.stack_bytes is None and self.local_bytes is None:
            return self.scratch_bytes
        return (self.stack_bytes or 0) + (self.local_bytes or 0)


class CodeObject(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    unit: str
    arch: str
    target: str = ""
    functions: int = 0
    kernels_without_code: list[str] = []
    #: AMDGPU code-object version (5, 6, …) from the ELF header; None for x86, and in
    #: codegen taken before it was recorded.
    code_object_version: int | None = None


class Codegen(BaseModel):
    """The codegen of one build (``codegen.json``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    #: The platform of the build it was read from (`codegen diff` compares like with like).
    platform: str
    build: str | None = None  # image tag or build name, set by whoever stores it
    archs: list[str]
    tools: dict[str, str]
    probe_seconds: float
    pattern: str | None = None  # CPU: which symbols were taken
    code_objects: list[CodeObject]
    kernels: dict[str, KernelCode]

    @property
    def code_object_versions(self) -> list[int]:
        """The code-object versions of the build's code objects, sorted (one, normally;
        none for a CPU build or a codegen taken before versions were recorded)."""
        found = (o.code_object_version for o in self.code_objects)
        return sorted({version for version in found if version is not None})

    def categories(self) -> dict[str, list[str]]:
        """Category -> keys, keys sorted."""
        found: dict[str, list[str]] = {}
        for key in sorted(self.kernels):
            found.setdefault(self.kernels[key].category, []).append(key)
        return found

    @field_validator("platform")
    @classmethod
    def _known_platform(cls, value: str) -> str:
        """A platform the registry knows (`orchestrator.platforms` enters the names)."""
        known = CHOICES.get("platform")
        if known is not None and value not in known:
            raise ValueError(f"{value!r} is not a platform ({', '.join(known)})")
        return value


def cpu_classify(name: str) -> tuple[str, bool]:
    """``(category, known)`` of an x86 symbol (mangled or demangled).

    The rules see the function's own identifier first, then its qualified name without
    arguments (``gmx::SettleData::setConstraints`` is known by its class).
    """
    base = base_name(name)
    qualified = name.split("(", 1)[0]
    for text in (base, qualified):
        for category, regex in _CPU_COMPILED:
            if regex.search(text):
                return category, True
    return "other", False


def is_gpu_arch(arch: str) -> bool:
    """An AMDGPU (gfx1201) or NVIDIA (sm_90) target, not the host's (x86_64)."""
    return arch.startswith(("gfx", "sm_"))


def category_of(name: str, demangled: str | None, arch: str) -> tuple[str, bool]:
    """GPU kernels by the kernel-trace categorizer, x86 functions by :data:`CPU_RULES`."""
    if is_gpu_arch(arch):
        return classify(name)
    return cpu_classify(demangled or name)


def _keys(records: list[dict[str, Any]]) -> list[str]:
    """Mangled name, made unique by ``@arch`` then ``@unit`` only where needed."""

    def count(key_of: Any) -> dict[str, int]:
        seen: dict[str, int] = {}
        for r in records:
            seen[key_of(r)] = seen.get(key_of(r), 0) + 1
        return seen

    by_name = count(lambda r: r["name"])
    by_arch = count(lambda r: f"{r['name']}@{r['arch']}")
    keys = []
    for r in records:
        key = r["name"]
        if by_name[key] > 1:
            key = f"{key}@{r['arch']}"
            if by_arch[key] > 1:
                key = f"{key}@{r['unit']}"
        keys.append(key)
    return keys


def _kernel(record: dict[str, Any]) -> KernelCode:
    category, known = category_of(record["name"], record.get("demangled"), str(record["arch"]))
    fields = dict(record, category=category, category_known=known)
    if fields.get("wgp_mode") is not None:
        fields["wgp_mode"] = bool(fields["wgp_mode"])
    if record.get("kind") == "kernel" and record.get("vgprs") is not None:
        detail = occupancy_detail(
            record["arch"],
            vgprs=record["vgprs"],
            sgprs=record.get("sgprs") or 0,
            lds_bytes=record.get("lds_bytes") or 0,
            wavefront_size=record.get("wavefront_size") or 64,
            max_flat_workgroup_size=record.get("max_flat_workgroup_size"),
            wgp_mode=fields.get("wgp_mode"),
        )
        if detail is not None:
            fields.update(occupancy=detail.waves, occupancy_limiter=detail.limiter)
    if record.get("kind") == "kernel" and record.get("registers") is not None:
        warps = register_warps(str(record["arch"]), int(record["registers"]))
        if warps is not None:
            fields.update(occupancy=warps, occupancy_limiter="registers")
    return KernelCode.model_validate(fields)


def _damaged(source: str, what: str) -> UserError:
    return UserError(
        f"The codegen probe output from {source} is damaged: {what}. It comes from "
        "orchestrator/payloads/codegen_probe.py run inside the image; run it again (a "
        "truncated capture or an image without llvm-objdump/llvm-readelf or objdump/nm "
        "gives this)."
    )


#: The platform whose images each probe mode reads, when the caller does not say.
DEFAULT_PLATFORM = {"gpu": "rocm", "sass": "cuda", "cpu": "cpu"}


def parse_probe_output(
    text: str, *, source: str, build: str | None = None, platform: str | None = None
) -> Codegen:
    """The probe's stdout -> Codegen; a clear UserError naming `source` if damaged.

    `platform` is the build's (its record says); without it, the probe's mode says
    (:data:`DEFAULT_PLATFORM`).
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = " (cut short)" if text.strip() and not text.rstrip().endswith("}") else ""
        raise _damaged(source, f"not JSON{cut}: {exc.msg} at character {exc.pos}") from None
    if not isinstance(raw, dict) or raw.get("mode") not in DEFAULT_PLATFORM:
        raise _damaged(source, 'no "mode" of gpu, sass or cpu at the top level')
    if raw.get("schema") != codegen_probe.SCHEMA:
        raise _damaged(
            source, f"probe schema {raw.get('schema')!r}, expected {codegen_probe.SCHEMA}"
        )
    platform = platform or DEFAULT_PLATFORM[raw["mode"]]
    try:
        records = list(raw["functions"])
        kernels = [_kernel(r) for r in records]
        return Codegen(
            platform=platform,
            build=build,
            archs=raw["archs"],
            tools=raw["tools"],
            probe_seconds=raw["elapsed_s"],
            pattern=raw.get("pattern"),
            code_objects=raw["code_objects"],
            kernels=dict(zip(_keys(records), kernels, strict=True)),
        )
    except KeyError as exc:
        raise _damaged(source, f"field {exc} is missing") from None
    except (TypeError, ValidationError) as exc:
        raise _damaged(source, _first_error(exc)) from None


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg']}"
    return str(exc)


def load_codegen(path: Path) -> Codegen:
    """Read a stored ``codegen.json``; one clear paragraph if it is missing or damaged."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(
            f"Cannot read the codegen fingerprint {path}: {exc.strerror}. It is written when "
            "the image is built; build the image again or point at the right file."
        ) from None
    try:
        return Codegen.model_validate_json(text)
    except ValidationError as exc:
        what = "not JSON (cut short?)" if not text.strip().endswith("}") else _first_error(exc)
        raise UserError(
            f"The codegen fingerprint {path} is damaged: {what}. Delete it and build the "
            "image again (or re-run the probe on the image) to write a new one."
        ) from None


def probe_source() -> str:
    """The probe's text, to send into a container (``python3 -c``)."""
    return Path(codegen_probe.__file__).read_text()


def probe_argv(
    mode: Literal["gpu", "sass", "cpu", "asm"],
    target: str,
    *,
    objdump: str | None = None,
    cuobjdump: str | None = None,
    readelf: str | None = None,
    nm: str | None = None,
    cxxfilt: str | None = None,
    name: str | Sequence[str] | None = None,
    unit: str | None = None,
    arch: str | None = None,
    pattern: str | None = None,
) -> list[str]:
    """``python3 -c <probe> MODE ...``: the command to run in a container of the image.

    `objdump` reads AMDGPU and x86 code, `cuobjdump` NVIDIA's (``sass``; ``asm`` takes either).
    """
    if not {"sass": cuobjdump, "asm": objdump or cuobjdump}.get(mode, objdump):
        raise ValueError(f"{mode} needs {'cuobjdump' if mode == 'sass' else 'objdump'}")
    argv = ["python3", "-c", probe_source(), mode]
    options = {"--objdump": objdump, "--cuobjdump": cuobjdump, "--readelf": readelf,
               "--nm": nm, "--cxxfilt": cxxfilt, "--unit": unit, "--arch": arch,
               "--pattern": pattern}  # fmt: skip
    for flag, value in options.items():
        if value is not None:
            argv += [flag, value]
    argv.append(target)
    if mode == "asm":
        if not name:
            raise ValueError("asm needs a function name")
        argv += [name] if isinstance(name, str) else list(name)
    return argv
