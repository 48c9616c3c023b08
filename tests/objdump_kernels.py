"""An independent reading of AMDGPU code objects: `llvm-objdump -d`'s own text, split by symbol.

The codegen check of `tests/test_rocm_loop.py` compares what `codegen diff` calls changed
with what an independent compile changes. That independent side must not read the code
objects with the product's probe (`orchestrator/payloads/codegen_probe.py`) or parser
(`orchestrator/codegen/model.py`): a mistake there (a normalisation that drops too much,
a hash over the wrong lines) would then be on both sides and agree with itself. So here
the code objects are disassembled by `llvm-objdump -d` in the container (`DISASSEMBLE`,
plain output, no options but the target) and this module splits that text by symbol and
compares instruction text, with nothing but string handling written for the test: no
normalisation beyond dropping objdump's `//` comment (address and encoding) and repeated
blanks.
"""

from __future__ import annotations

from pathlib import Path

#: Shell lines for the check container: every code object that `llvm-objdump --offloading`
#: extracted under `{roots}` (`<object>.<n>.hipv4-amdgcn-amd-amdhsa--<arch>`), disassembled
#: for its own architecture (the name's last `--` part) into `<code object>.objdump`.
DISASSEMBLE = r"""for root in {roots}; do
  find "$root" -type f -name '*-amdgcn-amd-amdhsa--*' ! -name '*.objdump' | sort \
  | while read -r object; do
      {bin}/llvm-objdump -d --mcpu="${{object##*--}}" "$object" > "$object.objdump"
    done
done
"""
SUFFIX = ".objdump"


def unit_of(relative: str) -> str:
    """The source file of a code object from its path under the output folder:
    `src/gromacs/CMakeFiles/libgromacs.dir/mdlib/x_hip.cpp.o.0.hipv4-…` →
    `src/gromacs/mdlib/x_hip.cpp` (the object path, less `.o.<n>.<target>` and CMake's
    `CMakeFiles/<target>.dir` folders)."""
    path = relative.split(".o.", 1)[0]
    parts = path.split("/")
    kept = [
        part
        for i, part in enumerate(parts)
        if part != "CMakeFiles" and not (i > 0 and parts[i - 1] == "CMakeFiles")
    ]
    return "/".join(kept)


def split_symbols(text: str) -> dict[str, list[str]]:
    """`{symbol: instruction lines}` of one `llvm-objdump -d` output.

    A symbol's block starts at its line `<address> <symbol>:` and runs to the next such
    line or section header; an instruction line is indented and its text is what precedes
    `//` (objdump's comment holds the address and the encoding), blanks squeezed.
    """
    found: dict[str, list[str]] = {}
    body: list[str] | None = None
    for line in text.splitlines():
        head = line.rstrip()
        if head.endswith(">:") and " <" in head and not line[:1].isspace():
            address, _, name = head[:-2].partition(" <")
            if all(c in "0123456789abcdef" for c in address):
                body = found.setdefault(name, [])
                continue
        if line.startswith("Disassembly of section"):
            body = None
            continue
        if body is None or not line[:1].isspace():
            continue
        code = " ".join(line.split("//", 1)[0].split())
        if code and code != "...":
            body.append(code)
    return {name: lines for name, lines in found.items() if lines}


def read_folder(root: Path, target: str = "") -> dict[tuple[str, str], list[str]]:
    """`{(unit, symbol): instruction lines}` of every `.objdump` text under `root` (only
    those of GPU `target`'s code objects, when given)."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob(f"*{'--' + target if target else ''}{SUFFIX}")):
        unit = unit_of(path.relative_to(root).as_posix())
        for name, lines in split_symbols(path.read_text()).items():
            assert (unit, name) not in found, f"{name} twice in {unit} {target}"
            found[unit, name] = lines
    return found


def changed(plain: Path, option: Path, target: str = "") -> tuple[set[tuple[str, str]], set[str]]:
    """The (unit, symbol) pairs whose instruction text differs between the two folders'
    disassemblies (of `target`'s code objects, when given), and every unit read; both
    folders must hold the same symbols."""
    before, after = read_folder(plain, target), read_folder(option, target)
    differ = sorted(before.keys() ^ after.keys())[:10]
    assert before and before.keys() == after.keys(), (target, differ)
    return {key for key in before if before[key] != after[key]}, {unit for unit, _ in before}


def target_of(relative: str) -> str:
    """The GPU target of a code object from its name's last `--` part (`…--gfx942.objdump`)."""
    return relative.removesuffix(SUFFIX).rsplit("--", 1)[1]


def changed_by_target(plain: Path, option: Path) -> set[tuple[str, str, str]]:
    """(target, unit, symbol) of every symbol whose instruction text differs, for folders
    holding each unit's code objects for several targets (compared target by target)."""
    targets = {target_of(p.name) for p in plain.rglob(f"*{SUFFIX}")}
    return {
        (target, *key) for target in sorted(targets) for key in changed(plain, option, target)[0]
    }
