"""What an ELF file asks of the system that loads it: the libraries it names, where it
looks for them, and the symbol versions it needs (GLIBC_2.38, GLIBCXX_3.4.32).

An imported LLVM is checked against the builder before an image is made: the loader
would say only the first thing missing, this says all of it. Read from the section
headers, as `readelf -d -V` prints them; 64-bit little-endian files only (x86-64,
AArch64), others are not ELF files this tool runs.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_MAGIC = b"\x7fELF"
_SHT_DYNAMIC, _SHT_VERNEED = 6, 0x6FFFFFFE
_DT_NEEDED, _DT_RPATH, _DT_RUNPATH = 1, 15, 29
_SECTION = struct.Struct("<IIQQQQIIQQ")
_DYN = struct.Struct("<qQ")
_VERNEED = struct.Struct("<HHIII")
_VERNAUX = struct.Struct("<IHHII")


@dataclass(frozen=True)
class ElfFacts:
    """One ELF file's needs: `versions` maps a library (`libc.so.6`) to the version
    names needed from it; `comment` holds the compilers that made it (`.comment`)."""

    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    versions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    comment: tuple[str, ...] = ()


def read_elf(path: Path) -> ElfFacts | None:
    """The needs of the ELF file at `path`; None when it is no 64-bit little-endian ELF."""
    with path.open("rb") as handle:
        head = handle.read(64)
        if len(head) < 64 or head[:4] != _MAGIC or head[4] != 2 or head[5] != 1:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _facts(data, head)


def _facts(data: mmap.mmap, head: bytes) -> ElfFacts:
    shoff, = struct.unpack_from("<Q", head, 0x28)  # fmt: skip
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    sections = [
        _SECTION.unpack_from(data, shoff + i * shentsize)
        for i in range(shnum)
        if shoff and shoff + (i + 1) * shentsize <= len(data)
    ]
    if not sections:
        return ElfFacts()

    def strings(index: int) -> bytes:
        if index >= len(sections):
            return b""
        offset, size = sections[index][4], sections[index][5]
        return bytes(data[offset : offset + size])

    names = strings(shstrndx)
    needed: list[str] = []
    runpath: list[str] = []
    versions: dict[str, tuple[str, ...]] = {}
    comment: tuple[str, ...] = ()
    for name, kind, _f, _a, offset, size, link, info, _al, _e in sections:
        if kind == _SHT_DYNAMIC:
            table = strings(link)
            for start in range(offset, offset + size - _DYN.size + 1, _DYN.size):
                tag, value = _DYN.unpack_from(data, start)
                if tag == 0:
                    break
                if tag == _DT_NEEDED:
                    needed.append(_cstr(table, value))
                elif tag in (_DT_RPATH, _DT_RUNPATH):
                    runpath += [p for p in _cstr(table, value).split(":") if p]
        elif kind == _SHT_VERNEED:
            versions |= _verneed(data, offset, info, strings(link))
        elif _cstr(names, name) == ".comment":
            text = bytes(data[offset : offset + size]).decode(errors="replace")
            comment = tuple(dict.fromkeys(s.strip() for s in text.split("\0") if s.strip()))
    return ElfFacts(tuple(needed), tuple(runpath), versions, comment)


def _verneed(data: mmap.mmap, at: int, count: int, table: bytes) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for _ in range(count):
        _version, cnt, file, aux, following = _VERNEED.unpack_from(data, at)
        names, where = [], at + aux
        for _ in range(cnt):
            _hash, _flags, _other, name, step = _VERNAUX.unpack_from(data, where)
            names.append(_cstr(table, name))
            where += step
        found[_cstr(table, file)] = tuple(names)
        if not following:
            break
        at += following
    return found


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode(errors="replace")


def newest(names: Iterable[str], prefix: str) -> tuple[int, ...] | None:
    """The highest `<prefix><a.b.c>` version among `names` (`GLIBC_` → (2, 38)), or None."""
    pattern = re.compile(re.escape(prefix) + r"(\d+(?:\.\d+)*)$")
    found = [tuple(map(int, m[1].split("."))) for n in names if (m := pattern.match(n))]
    return max(found, default=None)


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))
