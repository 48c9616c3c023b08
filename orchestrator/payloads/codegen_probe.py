"""Codegen probe: runs INSIDE a GROMACS image, prints JSON on stdout.

Standard library only, Python 3.9+, no imports from ``orchestrator``: the host sends this
file into a container of the image (``python3 - ARGS < codegen_probe.py`` or ``python3 -c``)
and calls the image's own LLVM/binutils tools, so the codegen describes the machine
code that image really holds. The host parses the JSON (``orchestrator.codegen.model``).
It is one file over 500 lines on purpose: it is sent whole, and imports nothing beside it.

Modes::

    gpu --objdump P --readelf P [--cxxfilt P] DIR
        every AMDGPU code object under DIR (``<unit>.o.<n>.hipv4-amdgcn-amd-amdhsa--gfxNNNN``,
        as ``llvm-objdump --offloading`` names them): one record per kernel and per
        non-inlined device function, with the sha256 of its normalised code, instruction
        counts by class and (kernels) the resource counts of the ``amdhsa.kernels`` notes;
        per code object its code-object version (the ELF header's ABI version byte).
    sass --cuobjdump P [--cxxfilt P] DIR
        every CUDA object (``*.o``, ``*.cubin``) under DIR, by ``cuobjdump -sass`` and
        ``-res-usage``: one record per function of each ELF (``code for sm_NN``), with the
        sha256 of its normalised SASS, instruction classes and its resources.
    asm (--objdump P | --cuobjdump P) DIR|LIB NAME [--unit U] [--arch A] [--nm P]
        the normalised text of one function (GPU code objects under DIR, or x86 in LIB).
    cpu --objdump P --nm P [--cxxfilt P] [--pattern REGEX] LIB
        the same for the hot x86 functions of a shared library (symbol table + disassembly).

Normalisation keeps only what the compiler chose: mnemonics and operands. Addresses,
encodings, comments, ``<symbol+offset>`` annotations and label lines go; so do trailing
alignment ``s_nop``/``s_code_end``, and values that only say where code or data landed
(AMDGPU pc-relative literals after ``s_getpc_b64``, x86 branch/call targets and
``%rip`` displacements), so that a change in one function does not dirty its neighbours.
SASS: ``/*addr*/`` and encodings go, so do the trailing ``BRA`` self-loop and ``NOP``
padding; branch targets become ``.L<n>`` (the n-th instruction of the function), which
also renumbers nvdisasm's ``.L_x_N`` labels, numbered across the whole ELF.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn

Record = dict[str, object]

SCHEMA = 1
CODE_OBJECT = re.compile(
    r"^(?P<obj>.+?)\.(?P<index>\d+)\.(?P<kind>hipv4|hip|openmp)-(?P<triple>amdgcn-amd-amdhsa)-"
    r"(?P<env>[^-]*)-(?P<arch>gfx[0-9a-f]+)(?P<features>(:[A-Za-z0-9_]+[+-])*)$"
)
CMAKE_DIR = re.compile(r"(^|/)CMakeFiles/[^/]+\.dir/")
BLOCK = re.compile(r"^(?:[0-9a-fA-F]+ )?<(?P<name>.+)>:\s*$")
ADDR_PREFIX = re.compile(r"^\s*[0-9a-fA-F]+:\s+")
COMMENT = re.compile(r"\s*//.*$")
ANGLE = re.compile(r"\s*<[^<>]*(?:<[^<>]*>[^<>]*)*>")
SPACES = re.compile(r"\s+")
NOTE_ITEM = re.compile(r"^  - (?P<rest>.*)$")
NOTE_KEY = re.compile(r"^\s*(?P<key>\.[A-Za-z0-9_]+):\s*(?P<value>.*)$")

# An AMDGPU HSA code object says its code-object version in its ELF header: e_ident[EI_OSABI]
# (byte 7) is ELFOSABI_AMDGPU_HSA and e_ident[EI_ABIVERSION] (byte 8) is
# ELFABIVERSION_AMDGPU_HSA_V<n> = n - 2 (V2 = 0 ... V6 = 4; LLVM's BinaryFormat/ELF.h).
ELF_MAGIC = b"\x7fELF"
EI_OSABI, EI_ABIVERSION = 7, 8
ELFOSABI_AMDGPU_HSA = 64
HSA_ABIVERSION_OFFSET = 2

NOTE_FIELDS = {
    ".vgpr_count": "vgprs",
    ".sgpr_count": "sgprs",
    ".agpr_count": "agprs",
    ".vgpr_spill_count": "vgpr_spills",
    ".sgpr_spill_count": "sgpr_spills",
    ".group_segment_fixed_size": "lds_bytes",
    ".private_segment_fixed_size": "scratch_bytes",
    ".wavefront_size": "wavefront_size",
    ".max_flat_workgroup_size": "max_flat_workgroup_size",
    ".workgroup_processor_mode": "wgp_mode",
    ".uses_dynamic_stack": "dynamic_stack",
}

GPU_CLASSES = ("valu", "salu", "vmem", "smem", "lds", "branch", "wait", "other")
CPU_CLASSES = ("vector", "scalar_fp", "integer", "memory", "branch", "other")

# AMDGPU mnemonics by class; names changed across generations (gfx11 ds_read -> ds_load,
# gfx12 s_waitcnt -> s_wait_*cnt, s_add_u32 -> s_add_co_u32), so classes go by family prefix.
_SMEM = re.compile(
    r"^s_(buffer_)?(load|store|atomic|prefetch)|^s_(scratch|dcache|memtime|memrealtime|atc_probe)"
)
_WAIT = re.compile(r"^s_(waitcnt|wait_|barrier|sleep)")
_BRANCH = re.compile(r"^s_(branch|cbranch|setpc|swappc|call|rfe)")
_GPU_OTHER = re.compile(
    r"^s_(nop|endpgm|code_end|sendmsg|delay_alu|clause|inst_prefetch|set_inst_prefetch"
    r"|setprio|trap|ttrace|icache|denorm_mode|round_mode|version|singleuse_va)"
)
_VMEM = re.compile(r"^(buffer|tbuffer|global|flat|scratch|image)_")
# pc-relative address materialisation: literals that only encode where data landed.
_PCREL_ADD = re.compile(r"^s_(add|addc|add_co|add_co_ci|sub|subb)_[iu]32$")
_LITERAL = re.compile(r"(?<![\w.])(0x[0-9a-fA-F]+|-?\d+)$")
_SPAIR = re.compile(r"^s\[(\d+):(\d+)\]$")


def gpu_class(mnemonic: str) -> str:
    """Instruction class of an AMDGPU mnemonic (see GPU_CLASSES)."""
    if mnemonic.startswith("v_"):
        return "valu"
    if mnemonic.startswith("ds_"):
        return "lds"
    if _VMEM.match(mnemonic):
        return "vmem"
    if mnemonic.startswith("s_"):
        if _SMEM.match(mnemonic):
            return "smem"
        if _WAIT.match(mnemonic):
            return "wait"
        if _BRANCH.match(mnemonic):
            return "branch"
        if _GPU_OTHER.match(mnemonic):
            return "other"
        return "salu"
    return "other"


_X86_BRANCH = re.compile(r"^(j[a-z]+|call|ret|jmp|loop|notrack|bnd)")
_X86_X87 = re.compile(r"^f[a-z]")
_X86_SCALAR = re.compile(r"(ss|sd|sh)$|^cvt\w*(ss|sd|sh)2|^cvt\w*2(ss|sd|sh)")
_X86_PACKED = re.compile(
    r"broadcast|pack|unpck|shuf|blend|perm|extract|insert|dup|msk|gather|movs[hl]"
)
_X86_OTHER = frozenset(
    {"nop", "nopw", "nopl", "endbr64", "int3", "ud2", "hlt", "pause", "cs", "data16"}
    | {"lfence", "mfence", "sfence", "vzeroupper"}
)


def cpu_class(mnemonic: str, operands: str) -> str:
    """Instruction class of an x86 mnemonic in AT&T syntax (see CPU_CLASSES).

    Exclusive, in this order: branch/call, x87 and SSE/AVX scalar FP (``vaddss``), other
    vector SIMD (any xmm/ymm/zmm/mask operand), padding and fences (``other``), integer
    instructions with a memory operand (``memory``), and the rest (``integer``).
    """
    if _X86_BRANCH.match(mnemonic):
        return "branch"
    if _X86_X87.match(mnemonic):
        return "scalar_fp"
    if mnemonic in _X86_OTHER:
        return "other"
    wide = "%ymm" in operands or "%zmm" in operands
    if wide or "%xmm" in operands or "%k" in operands:
        base = mnemonic[1:] if mnemonic.startswith("v") else mnemonic
        if not wide and _X86_SCALAR.search(base) and not _X86_PACKED.search(base):
            return "scalar_fp"
        return "vector"
    if "(" in operands:
        return "memory"
    return "integer"


def fail(message: str) -> NoReturn:
    """Stop with one line on stderr and exit code 1; the host reports the line."""
    sys.stderr.write("codegen_probe: " + message + "\n")
    sys.exit(1)


def need(*tools: str | None) -> None:
    """Stop at once, with one message, when a tool is not in the image."""
    for tool in tools:
        if tool and shutil.which(tool) is None:
            fail(f"{tool} is not in this image (pass the path of the image's own tool)")


def try_run(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a tool; 127 when it cannot be started."""
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    except OSError as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def run(argv: list[str], stdin: str | None = None) -> str:
    """stdout of a tool that must succeed."""
    code, out, err = try_run(argv, stdin)
    if code != 0:
        fail("{} failed ({}): {}".format(" ".join(argv[:4]), code, err.strip()[-800:]))
    return out


def tool_version(path: str) -> str:
    """The line of ``--version`` that carries a dotted version (LLVM: 2nd line, GNU: 1st)."""
    code, out, err = try_run([path, "--version"])
    if code == 127:
        return "unavailable"
    lines = [line.strip() for line in (out or err).splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\d+\.\d+", line):
            return line
    return lines[0] if lines else "unavailable"


# --- disassembly ------------------------------------------------------------------------


def gpu_normalise(lines: list[str]) -> list[str]:
    """Instruction lines of one function -> normalised text lines.

    ``s_getpc_b64 s[a:b]`` followed (within a few instructions) by adds into ``sa``/``sb``
    materialises a pc-relative address of data or of a called function: those literals
    only say where things landed in the code object, so they become ``<pcrel>``.
    """
    out: list[str] = []
    pending: dict[str, int] = {}
    for raw in lines:
        text = ANGLE.sub("", COMMENT.sub("", ADDR_PREFIX.sub("", raw))).strip()
        if not text or text == "...":  # "...": objdump skipped zero fill
            continue
        text = SPACES.sub(" ", text)
        mnemonic, _, operands = text.partition(" ")
        if mnemonic == "s_getpc_b64":
            m = _SPAIR.match(operands)
            pending = {"s" + m.group(1): 8, "s" + m.group(2): 8} if m else {}
        elif pending:
            dest = operands.split(",", 1)[0].strip()
            if _PCREL_ADD.match(mnemonic) and dest in pending:
                text = _LITERAL.sub("<pcrel>", text)
                del pending[dest]
            pending = {reg: left - 1 for reg, left in pending.items() if left > 1}
        out.append(text)
    while out and out[-1].startswith(("s_nop", "s_code_end")):
        out.pop()
    return out


_X86_TARGET = re.compile(r"^(?P<op>\S+)\s+\*?(?P<addr>[0-9a-fA-F]+)\b")
_RIP = re.compile(r"-?0x[0-9a-fA-F]+\(%rip\)")
_X86_ANGLE = re.compile(r"<(?P<sym>[^<>+]+)(?P<off>\+0x[0-9a-fA-F]+)?>")
_X86_PADDING = frozenset({"nop", "nopw", "nopl", "int3", "xchg", "data16", "cs"})


def cpu_normalise(lines: list[str], function: str) -> list[str]:
    """x86 AT&T lines of one function -> normalised lines (no addresses, no layout).

    Branch and call targets become ``<.+0xOFF>`` inside the function and ``<callee>``
    outside it; ``%rip`` displacements (constants, GOT) become ``<rip>``.
    """
    out: list[str] = []
    for raw in lines:
        code, _, _comment = ADDR_PREFIX.sub("", raw).partition("#")
        code = SPACES.sub(" ", code).strip()
        if not code or code == "(bad)":
            continue
        m = _X86_TARGET.match(code)
        if m and _X86_BRANCH.match(m.group("op")):
            target = _X86_ANGLE.search(code)
            if target is None:
                code = m.group("op") + " <addr>"
            elif target.group("sym") == function:
                code = "{} <.{}>".format(m.group("op"), target.group("off") or "+0x0")
            else:
                code = "{} <{}>".format(m.group("op"), target.group("sym"))
        else:
            code = _RIP.sub("<rip>(%rip)", ANGLE.sub("", code))
        out.append(code)
    while out and out[-1].split(" ", 1)[0] in _X86_PADDING:
        out.pop()
    return out


def blocks(
    text_lines: Iterable[str], wanted: set[str] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """(symbol, raw instruction lines) per symbol block of ``objdump -d`` output."""
    name: str | None = None
    body: list[str] = []
    for line in text_lines:
        m = BLOCK.match(line)
        if m:
            if name is not None and (wanted is None or name in wanted):
                yield name, body
            name, body = m.group("name"), []
        elif name is not None and line[:1] in ("\t", " ") and line.strip():
            body.append(line)
    if name is not None and (wanted is None or name in wanted):
        yield name, body


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def count_classes(lines: list[str], classify: Callable[[str, str], str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        mnemonic, _, operands = line.partition(" ")
        key = classify(mnemonic, operands)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _gpu_class2(mnemonic: str, _operands: str) -> str:
    return gpu_class(mnemonic)


# --- notes ---------------------------------------------------------------------------------


def _note_value(value: str) -> object:
    value = value.strip().strip("'\"")
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value, 0)
    except ValueError:
        return value


def parse_notes(text: str) -> tuple[dict[str, dict[str, object]], str]:
    """``llvm-readelf --notes`` YAML -> ({kernel .name: {.key: value}}, amdhsa.target).

    Only the scalar keys of each ``amdhsa.kernels`` entry are read (4-space indent); the
    nested ``.args`` lists are skipped, which keeps this a line scan, not a YAML parser.
    """
    kernels: dict[str, dict[str, object]] = {}
    target = ""
    current: dict[str, object] | None = None
    in_kernels = False

    def close() -> None:
        if current:
            kernels[str(current.get(".name", "?"))] = current

    for line in text.splitlines():
        if not line.startswith(" "):
            if line.startswith("amdhsa.target:"):
                target = line.split(":", 1)[1].strip().strip("'\"")
            close()
            current, in_kernels = None, line.startswith("amdhsa.kernels:")
            continue
        if not in_kernels:
            continue
        item = NOTE_ITEM.match(line)
        if item:
            close()
            current, line = {}, "    " + item.group("rest")
        if current is None or len(line) - len(line.lstrip(" ")) != 4:
            continue
        m = NOTE_KEY.match(line)
        if m and m.group("value"):
            current[m.group("key")] = _note_value(m.group("value"))
    close()
    return kernels, target


# --- gpu mode -------------------------------------------------------------------------------


def code_object_version(header: bytes) -> int | None:
    """The code-object version (2, 3, … 6) of an AMDGPU HSA code object from its first bytes;
    None for anything else (not ELF, another OS ABI, a header cut short)."""
    if len(header) <= EI_ABIVERSION or header[:4] != ELF_MAGIC:
        return None
    if header[EI_OSABI] != ELFOSABI_AMDGPU_HSA:
        return None
    return header[EI_ABIVERSION] + HSA_ABIVERSION_OFFSET


def read_code_object_version(path: str) -> int | None:
    """:func:`code_object_version` of the file at `path` (None when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return code_object_version(handle.read(16))
    except OSError:
        return None


def unit_of(root: str, path: str) -> str:
    """The object's path relative to root without ``.o``/``.cubin`` and without CMake's
    ``CMakeFiles/<target>.dir/`` part: ``src/gromacs/ewald/pme_solve_hip.cpp``."""
    unit = CMAKE_DIR.sub(r"\1", os.path.relpath(path, root).replace(os.sep, "/"))
    for suffix in (".o", ".cubin"):
        unit = unit[: -len(suffix)] if unit.endswith(suffix) else unit
    return unit


def find_code_objects(root: str) -> list[tuple[str, str, str]]:
    """(path, unit, arch) of every AMDGPU code object under root, sorted by path."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for filename in sorted(filenames):
            m = CODE_OBJECT.match(filename)
            if m:
                unit = unit_of(root, os.path.join(dirpath, m.group("obj")))
                found.append((os.path.join(dirpath, filename), unit, m.group("arch")))
    return found


def code_object_records(
    rel: str,
    unit: str,
    arch: str,
    notes_text: str,
    disasm_text: str,
    version: int | None = None,
) -> tuple[list[Record], Record]:
    """Records of one code object's functions from its notes and disassembly texts, and
    its summary (with `version`, its code-object version, when known)."""
    notes, target = parse_notes(notes_text)
    records: list[Record] = []
    for name, body in blocks(disasm_text.splitlines()):
        code = gpu_normalise(body)
        if not code or name.startswith("."):
            continue  # section padding (s_code_end) before the first function
        note = notes.get(name)
        kind = "function" if note is None else "kernel"
        record: Record = dict(name=name, kind=kind, unit=unit, arch=arch, code_object=rel)
        record.update(sha256=digest(code), instructions=len(code))
        record["classes"] = count_classes(code, _gpu_class2)
        for key, field in NOTE_FIELDS.items():
            record[field] = None if note is None else note.get(key)
        records.append(record)
    missing = sorted(set(notes) - {str(r["name"]) for r in records})
    summary: Record = dict(path=rel, unit=unit, arch=arch, target=target)
    summary.update(functions=len(records), kernels_without_code=missing)
    summary["code_object_version"] = version
    return records, summary


def demangle_all(cxxfilt: str | None, names: Iterable[str]) -> dict[str, str]:
    """One c++filt process for all names; {} when there is none."""
    unique = sorted(set(names))
    if not cxxfilt or not unique:
        return {}
    code, out, _err = try_run([cxxfilt], stdin="\n".join(unique) + "\n")
    lines = out.splitlines()
    if code != 0 or len(lines) != len(unique):
        return {}
    return {name: lines[i] for i, name in enumerate(unique)}


def gpu_disassemble(objdump: str, arch: str, path: str) -> str:
    return run([objdump, "-d", "--no-show-raw-insn", "--no-leading-addr", "--mcpu=" + arch, path])


def gpu_mode(args: argparse.Namespace) -> Record:
    start = time.time()
    objects = find_code_objects(args.dir)
    records: list[Record] = []
    summary: list[Record] = []

    def tool_output(obj: tuple[str, str, str]) -> tuple[str, str, str, str, str]:
        path, unit, arch = obj
        notes = run([args.readelf, "--notes", path])
        return path, unit, arch, notes, gpu_disassemble(args.objdump, arch, path)

    # the tools run a few code objects ahead (they release the GIL); parsing stays in order
    workers = max(1, min(4, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for path, unit, arch, notes, disasm in pool.map(tool_output, objects):
            rel = os.path.relpath(path, args.dir).replace(os.sep, "/")
            version = read_code_object_version(path)
            found, info = code_object_records(rel, unit, arch, notes, disasm, version)
            records += found
            summary.append(info)
    tools = {"objdump": tool_version(args.objdump), "readelf": tool_version(args.readelf)}
    return device_result("gpu", tools, summary, records, args.cxxfilt, start)


def device_result(
    mode: str, tools: dict[str, str], summary: list[Record], records: list[Record],
    cxxfilt: str | None, start: float,
) -> Record:  # fmt: skip
    """The JSON of a device-code mode, each record with its demangled name."""
    names = demangle_all(cxxfilt, (str(r["name"]) for r in records))
    for record in records:
        record["demangled"] = names.get(str(record["name"]))
    return {
        "schema": SCHEMA,
        "mode": mode,
        "tools": tools,
        "archs": sorted({str(info["arch"]) for info in summary}),
        "code_objects": summary,
        "functions": records,
        "elapsed_s": round(time.time() - start, 3),
    }


# --- cpu mode -------------------------------------------------------------------------------

DEFAULT_CPU_PATTERN = (
    r"(?i)(nbnxm_kernel|nbnxn_kernel|spread_on_grid|spread_coefficients|make_bsplines"
    r"|calc_interpolation_idx|gather_f_bsplines|gather_energy_bsplines|solve_pme"
    r"|wrap_periodic_pmegrid|copy_(fft|pme)grid_to_(pme|fft)grid|gmx_fft_|gmx_parallel_3dfft"
    r"|fft5d_execute|update_?md|leap_?frog|settle|lincs)"
)


def parse_nm(text: str) -> list[tuple[int, int, str]]:
    """(address, size, name) of the sized text symbols in ``nm -S --defined-only`` output."""
    found: dict[str, tuple[int, int, str]] = {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in ("T", "t", "W", "w") and int(parts[1], 16):
            found.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16), parts[3]))
    return sorted(found.values())


def address_ranges(symbols: list[tuple[int, int, str]], gap: int = 1 << 16) -> list[list[int]]:
    """Nearby symbols merged into a few [start, stop) ranges: one objdump call each."""
    merged: list[list[int]] = []
    for address, size, _name in sorted(symbols):
        if merged and address - merged[-1][1] <= gap:
            merged[-1][1] = max(merged[-1][1], address + size)
        else:
            merged.append([address, address + size])
    return merged


def select_blocks(disasm_text: str, by_address: dict[int, str]) -> Iterator[tuple[str, list[str]]]:
    """(our symbol, raw lines) of the blocks that start at a chosen symbol's address.

    objdump names a block by whichever alias it prefers (possibly demangled), so blocks
    are matched by the address of their first instruction instead of by name.
    """
    for _name, body in blocks(disasm_text.splitlines()):
        m = re.match(r"^\s*([0-9a-fA-F]+):", body[0]) if body else None
        symbol = by_address.get(int(m.group(1), 16)) if m else None
        if symbol is not None:
            yield symbol, body


def cpu_functions(
    args: argparse.Namespace, only: set[str] | None = None
) -> Iterator[tuple[str, str | None, list[str]]]:
    """(mangled, demangled, raw lines) of the chosen x86 functions of ``args.lib``: those
    named in `only` (mangled or demangled), else those matching ``args.pattern``."""
    code, out, _err = try_run([args.nm, "-S", "--defined-only", args.lib])
    symbols = parse_nm(out) if code == 0 else []
    if not symbols:  # stripped: the dynamic symbol table still names exported functions
        symbols = parse_nm(run([args.nm, "-D", "-S", "--defined-only", args.lib]))
    names = demangle_all(args.cxxfilt, (s[2] for s in symbols))
    if only is not None:
        chosen = [s for s in symbols if s[2] in only or names.get(s[2]) in only]
    else:
        pattern = re.compile(args.pattern)
        chosen = [s for s in symbols if pattern.search(names.get(s[2], s[2]))]
    by_address: dict[int, str] = {}
    for address, _size, name in chosen:
        by_address.setdefault(address, name)
    for low, high in address_ranges(chosen):
        window = ["--start-address=" + hex(low), "--stop-address=" + hex(high)]
        disasm = run([args.objdump, "-d", "--no-show-raw-insn", *window, args.lib])
        for mangled, body in select_blocks(disasm, by_address):
            yield mangled, names.get(mangled), body


def cpu_record(mangled: str, demangled: str | None, body: list[str], lib: str) -> Record:
    code = cpu_normalise(body, mangled)
    base = os.path.basename(lib)
    record: Record = dict(name=mangled, demangled=demangled, kind="function", unit=base)
    record.update(arch="x86_64", code_object=base, sha256=digest(code), instructions=len(code))
    record["classes"] = count_classes(code, cpu_class)
    record.update({field: None for field in NOTE_FIELDS.values()})
    return record


def cpu_mode(args: argparse.Namespace) -> Record:
    start = time.time()
    records = [cpu_record(m, d, body, args.lib) for m, d, body in cpu_functions(args)]
    base = os.path.basename(args.lib)
    return {
        "schema": SCHEMA,
        "mode": "cpu",
        "tools": {"objdump": tool_version(args.objdump), "nm": tool_version(args.nm)},
        "archs": ["x86_64"],
        "code_objects": [
            dict(path=base, unit=base, arch="x86_64", target="x86_64", functions=len(records))
        ],
        "functions": records,
        "pattern": args.pattern,
        "elapsed_s": round(time.time() - start, 3),
    }


# --- sass mode ------------------------------------------------------------------------------

SASS_CLASSES = ("fp32", "fp64", "int", "uniform", "global", "shared", "local", "constant",
                "control", "sync", "move", "other")  # fmt: skip
# Opcode families (the opcode before its first "."), by class; U* not listed: uniform.
# HFMA2.MMA is how ptxas moves a constant into a register (-RZ, RZ, imm): a move.
_SASS_OPS = {
    op: cls
    for cls, ops in (
        ("fp32", "FADD FMUL FFMA FMNMX FSEL FSET FSETP FCHK FRND FSWZADD MUFU FADD32I FMUL32I"
                 " FFMA32I HADD2 HMUL2 HFMA2 HSETP2 HSET2 HMNMX2"),
        ("fp64", "DADD DMUL DFMA DSETP DSET DMNMX"),
        ("int", "IADD IADD3 IADD32I IMAD IMUL IMNMX IABS ISETP ISET LEA LOP LOP3 LOP32I SHF SHL"
                " SHR SEL PRMT POPC FLO BREV BMSK SGXT VIADD VIADDMNMX VIMNMX IDP PLOP3 PSETP"),
        ("global", "LDG STG LD ST RED REDG ATOM ATOMG LDGSTS LDGDEPBAR CCTL"),
        ("shared", "LDS STS ATOMS LDSM"),
        ("local", "LDL STL"),
        ("constant", "LDC"),
        ("control", "BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC BREAK BPT KILL YIELD NOP BMOV"),
        ("sync", "BAR MEMBAR DEPBAR WARPSYNC ERRBAR NANOSLEEP ENDCOLLECTIVE SHFL VOTE VOTEU"
                 " MATCH REDUX ELECT ARRIVES"),
        ("move", "MOV MOV32I S2R CS2R R2P P2R F2I I2F I2FP F2F F2FP I2I S2UR R2UR"),
    )
    for op in ops.split()
}  # fmt: skip
SASS_FIELDS = {"REG": "registers", "STACK": "stack_bytes", "SHARED": "shared_bytes",
               "LOCAL": "local_bytes", "CONSTANT[0]": "constant_bytes"}  # fmt: skip
_SASS_CODE_FOR = re.compile(r"^\s*code for (sm_\w+)\s*$")
_SASS_FUNCTION = re.compile(r"^\s*Function : (\S+)\s*$")
_SASS_INSN = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]+)\*/\s*(?P<text>[^;]*?)\s*;")
_SASS_LABEL = re.compile(r"^\s*(\.L_\w+):")
_SASS_PRED = re.compile(r"^@!?U?P[0-9T]+ ")
_SASS_TARGET = re.compile(r"^(?P<op>(?:@!?U?P[0-9T]+ )?(?:BRA|BSSY|CALL|JMP|SSY|PBK|PCNT)\b.*?)"
                          r"(?:(?P<addr>0x[0-9a-f]+)|`\((?P<label>\.L_\w+)\))$")  # fmt: skip
_RES_ARCH = re.compile(r"^arch = (sm_\w+)")
_RES_FUNCTION = re.compile(r"^\s*Function (\S+?):?\s*$")
_RES_VALUE = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")


def sass_class(text: str) -> str:
    """Instruction class of one normalised SASS line (see SASS_CLASSES)."""
    opcode = _SASS_PRED.sub("", text).split(" ", 1)[0]
    if opcode == "HFMA2.MMA":
        return "move"
    family = opcode.split(".", 1)[0]
    return _SASS_OPS.get(family) or ("uniform" if family.startswith("U") else "other")


def sass_normalise(lines: list[str]) -> list[str]:
    """Raw lines of one ``Function :`` (cuobjdump or nvdisasm) -> normalised SASS lines.

    Addresses and encodings go; branch targets (function-relative addresses in
    cuobjdump, ``.L_x_N`` labels numbered across the ELF in nvdisasm) become ``.L<n>``,
    the index of the instruction they point at; the final self-branch and NOP padding go.
    """
    code: list[tuple[int, str]] = []
    labels: dict[str, int] = {}
    for raw in lines:
        label = _SASS_LABEL.match(raw)
        if label:
            labels[label.group(1)] = len(code)
        m = _SASS_INSN.match(raw)
        if m:
            code.append((int(m.group("addr"), 16), SPACES.sub(" ", m.group("text"))))
    while code and code[-1][1] == "NOP":
        code.pop()
    index = {addr: n for n, (addr, _text) in enumerate(code)}
    out = []
    for n, (_addr, text) in enumerate(code):
        m = _SASS_TARGET.match(text)
        if m:
            where = labels.get(m.group("label") or "", index.get(int(m.group("addr") or "-1", 16)))
            if where == n == len(code) - 1 and text.startswith("BRA "):
                break  # the self-loop after the last EXIT
            text = m.group("op") + (".L?" if where is None else f".L{where}")
        out.append(text)
    return out


def sass_blocks(text: str) -> Iterator[tuple[str, list[tuple[str, list[str]]]]]:
    """(arch, [(function, raw lines)]) per ELF (``code for sm_NN``) of ``cuobjdump -sass``."""
    arch: str | None = None
    functions: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _SASS_CODE_FOR.match(line)
        if m:
            if arch is not None:
                yield arch, functions
            arch, functions = m.group(1), []
            continue
        m = _SASS_FUNCTION.match(line)
        if m and arch is not None:
            functions.append((m.group(1), []))
        elif functions:
            functions[-1][1].append(line)
    if arch is not None:
        yield arch, functions


def parse_res_usage(text: str) -> list[tuple[str, dict[str, dict[str, int]]]]:
    """(arch, {function: {REG: n, STACK: n, …}}) per ELF of ``cuobjdump -res-usage``."""
    found: list[tuple[str, dict[str, dict[str, int]]]] = []
    arch, name = "", None
    for line in text.splitlines():
        m = _RES_ARCH.match(line)
        arch = m.group(1) if m else arch
        if line.startswith("Resource usage:"):
            found.append((arch, {}))
            name = None
        elif found and _RES_FUNCTION.match(line):
            name = line.split()[1].rstrip(":")
        elif found and name is not None and _RES_VALUE.search(line):
            found[-1][1][name] = {k: int(v) for k, v in _RES_VALUE.findall(line)}
            name = None
    return found


def sass_records(
    rel: str, unit: str, sass_text: str, res_text: str
) -> tuple[list[Record], list[Record]]:
    """Records of one CUDA object's functions, and a summary per ELF, from its
    ``cuobjdump -sass`` and ``-res-usage`` texts (the n-th ELF of one is the other's n-th).

    A file with several ELFs of one arch (a linked library, not a build's object) names
    each ``<rel>#<n>``, its unit ``<unit>#<n>``, so equal names stay apart. A function
    that reaches EXIT is a kernel; a non-inlined device function (``-rdc``) returns.
    """
    elves = list(sass_blocks(sass_text))
    resources = parse_res_usage(res_text)
    seen = collections.Counter(arch for arch, _functions in elves)
    records: list[Record] = []
    summary: list[Record] = []
    nth: dict[str, int] = {}
    for i, (arch, functions) in enumerate(elves):
        nth[arch] = nth.get(arch, -1) + 1
        tag = f"#{nth[arch]}" if seen[arch] > 1 else ""
        res_arch, res = resources[i] if i < len(resources) else (arch, {})
        res = res if res_arch in (arch, "") else {}
        for name, body in functions:
            code = sass_normalise(body)
            exits = any(_SASS_PRED.sub("", t).startswith("EXIT") for t in code)
            kind = "kernel" if exits else "function"
            record: Record = dict(
                name=name, kind=kind, unit=unit + tag, arch=arch, code_object=rel + tag
            )
            record.update(sha256=digest(code), instructions=len(code))
            record["classes"] = count_classes(code, lambda op, rest: sass_class(f"{op} {rest}"))
            usage = res.get(name, {})
            record.update({field: usage.get(key) for key, field in SASS_FIELDS.items()})
            records.append(record)
        info: Record = dict(
            path=rel + tag, unit=unit + tag, arch=arch, target=arch, functions=len(functions)
        )
        info["kernels_without_code"] = sorted(set(res) - {name for name, _body in functions})
        summary.append(info)
    return records, summary


def find_cuda_objects(root: str) -> list[tuple[str, str]]:
    """(path, unit) of every ``*.o`` and ``*.cubin`` under root, sorted by path."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        paths = [os.path.join(dirpath, f) for f in sorted(filenames)]
        found += [(p, unit_of(root, p)) for p in paths if p.endswith((".o", ".cubin"))]
    return found


def sass_dump(cuobjdump: str, path: str, what: str = "-sass") -> str:
    """``cuobjdump -sass`` (or `what`) of one object; "" for a host-only object."""
    code, out, err = try_run([cuobjdump, what, path])
    if code != 0 and "does not contain device code" not in out + err:
        fail(f"{cuobjdump} {what} {path} failed ({code}): {err.strip()[-800:]}")
    return out if code == 0 else ""


def sass_mode(args: argparse.Namespace) -> Record:
    start = time.time()
    records: list[Record] = []
    summary: list[Record] = []
    workers = max(1, min(4, os.cpu_count() or 1))
    objects = find_cuda_objects(args.dir)

    def dumps(obj: tuple[str, str]) -> tuple[str, str, str, str]:
        sass, res = (sass_dump(args.cuobjdump, obj[0], what) for what in ("-sass", "-res-usage"))
        return obj[0], obj[1], sass, res

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for path, unit, sass, res in pool.map(dumps, objects):
            rel = os.path.relpath(path, args.dir).replace(os.sep, "/")
            found, info = sass_records(rel, unit, sass, res)
            records += found
            summary += info
    tools = {"cuobjdump": tool_version(args.cuobjdump)}
    return device_result("sass", tools, summary, records, args.cxxfilt, start)


# --- asm mode -------------------------------------------------------------------------------


def asm_found(args: argparse.Namespace) -> dict[str, list[tuple[str, list[str]]]]:
    """Each asked-for function's normalised text at every place it occurs. The target is
    disassembled once for all names: a GROMACS nonbonded unit takes tens of seconds."""
    wanted = set(args.name)
    found: dict[str, list[tuple[str, list[str]]]] = {name: [] for name in args.name}
    if os.path.isfile(args.target):
        if not (args.nm and args.objdump):
            fail("asm on a library needs --objdump and --nm")
        args.lib = args.target
        for mangled, demangled, body in cpu_functions(args, only=wanted):
            key = mangled if mangled in wanted else demangled
            found[key or mangled].append(("x86_64", cpu_normalise(body, mangled)))
    elif os.path.isdir(args.target) and args.cuobjdump:
        for path, unit in find_cuda_objects(args.target):
            if args.unit and unit != args.unit:
                continue
            for arch, functions in sass_blocks(sass_dump(args.cuobjdump, path)):
                for name, body in functions:
                    if name in wanted and (not args.arch or arch == args.arch):
                        found[name].append((unit + " " + arch, sass_normalise(body)))
    elif os.path.isdir(args.target):
        for path, unit, arch in find_code_objects(args.target):
            if (args.unit and unit != args.unit) or (args.arch and arch != args.arch):
                continue
            disasm = gpu_disassemble(args.objdump, arch, path)
            for name, body in blocks(disasm.splitlines(), wanted=wanted):
                found[name].append((unit + " " + arch, gpu_normalise(body)))
    else:
        fail("no such file or directory: " + args.target)
    return found


def asm_mode(args: argparse.Namespace) -> str:
    """Normalised text of one function, for a unified diff between two images; of several
    names, a JSON object of each one found exactly once (the others are left out)."""
    found = asm_found(args)
    if len(args.name) > 1:
        texts = {
            n: "\n".join(places[0][1]) + "\n" for n, places in found.items() if len(places) == 1
        }
        return json.dumps(texts, sort_keys=True) + "\n"
    ((name, places),) = found.items()
    if not places:
        fail(f"no function named {name} in {args.target}")
    if len(places) > 1:
        where = ", ".join(place for place, _lines in places)
        fail(f"{name} occurs {len(places)} times ({where}): pass --unit and/or --arch")
    return "\n".join(places[0][1]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codegen_probe", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode")
    modes = {
        "gpu": ("--objdump!", "--readelf!", "--cxxfilt", "dir"),
        "cpu": ("--objdump!", "--nm!", "--cxxfilt", "--pattern", "lib"),
        "sass": ("--cuobjdump!", "--cxxfilt", "dir"),
        "asm": (
            "--objdump",
            "--cuobjdump",
            "--nm",
            "--cxxfilt",
            "--unit",
            "--arch",
            "target",
            "name+",
        ),
    }
    for mode, options in modes.items():
        mode_parser = sub.add_parser(mode)
        for option in options:
            if option.startswith("--"):
                mode_parser.add_argument(option.rstrip("!"), required=option.endswith("!"))
            elif option.endswith("+"):
                mode_parser.add_argument(option.rstrip("+"), nargs="+")
            else:
                mode_parser.add_argument(option)
    sub.choices["cpu"].set_defaults(pattern=DEFAULT_CPU_PATTERN)
    args = parser.parse_args(argv)
    tools = ("objdump", "cuobjdump", "readelf", "nm", "cxxfilt")
    need(*(getattr(args, tool, None) for tool in tools))
    if args.mode == "asm" and not (args.objdump or args.cuobjdump):
        fail("asm needs --objdump (AMDGPU, x86) or --cuobjdump (SASS)")
    runners = {
        "gpu": (gpu_mode, os.path.isdir, "directory"),
        "cpu": (cpu_mode, os.path.isfile, "file"),
        "sass": (sass_mode, os.path.isdir, "directory"),
    }
    if args.mode == "asm":
        sys.stdout.write(asm_mode(args))
    elif args.mode in runners:
        run_mode, exists, kind = runners[args.mode]
        place = args.dir if kind == "directory" else args.lib
        if not exists(place):
            fail(f"no such {kind}: {place}")
        sys.stdout.write(json.dumps(run_mode(args), sort_keys=True) + "\n")
    else:
        parser.print_usage(sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
