"""A local stand-in of AMD's TheRock 7.12 apt repository, for the builder rehearsal.

Names, versions, dependencies and the install prefix are TheRock 7.12's, taken from the
recorded facts (tests/data/therock-7.12/facts.json) and AMD's own package.json excerpt:
each package's DEBDepends, with ROCm dependencies renamed as build_package.py renames
them. The contents are stand-ins: a shell script where AMD ships a binary (amdclang++
writes an ELF header whose EI_ABIVERSION says code-object v6, nothing more), empty files
where it ships libraries and headers; the paths are those the facts record. Packages
are built with dpkg-deb, indexed with dpkg-scanpackages, and the Release file signed
with gpg by a throwaway key, as an apt repository is.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
from email.utils import formatdate
from pathlib import Path
from typing import Any

FACTS_DIR = Path(__file__).parent / "data" / "therock-7.12"
VERSION = "7.12.0"

#: Stand-in amdclang++: `--version`, and for `-c ... -o OUT` a 64-byte ELF header whose
#: byte 8 (EI_ABIVERSION) is 4, which is what a code-object v6 device object carries.
AMDCLANG = r"""#!/bin/sh
# gmxbench rehearsal stand-in for TheRock 7.12's amdclang++ (not a compiler)
case "$1" in --version) echo "AMD clang version 7.12.0 (rehearsal stand-in)"; exit 0;; esac
out=""
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
[ -n "$out" ] || exit 1
printf '\177ELF\002\001\001\100\004' > "$out"
head -c 55 /dev/zero >> "$out"
"""


def script(text: str) -> str:
    return f"#!/bin/sh\n# gmxbench rehearsal stand-in, not AMD's tool\n{text}\n"


#: package.json name -> files below the prefix (text, or "->target" for a symlink).
STAND_INS: dict[str, dict[str, str]] = {
    "amdrocm-llvm": {
        "lib/llvm/bin/amdclang++": AMDCLANG,
        "lib/llvm/bin/ld.lld": script('echo "LLD 22.0.0 (rehearsal stand-in)"'),
        "lib/llvm/amdgcn/bitcode/ocml.bc": "",
        "bin/hipcc": script('echo "HIP version: 7.12 (rehearsal stand-in)"'),
        "bin/hipconfig": script('echo "7.12.0-stand-in"'),
    },
    "amdrocm-llvm-devel": {"bin/amdclang++": "->../lib/llvm/bin/amdclang++"},
    "amdrocm-runtime": {"lib/libamdhip64.so.7": ""},
    "amdrocm-runtime-devel": {
        "include/hip/hiprtc.h": "",
        "lib/cmake/hip-lang/hip-lang-config.cmake": "",
    },
    "amdrocm-base": {".info/version": VERSION + "\n"},
    "amdrocm-sysdeps": {"lib/rocm_sysdeps/lib/.stand-in": ""},
    "amdrocm-amdsmi": {"bin/amd-smi": script("exit 0")},
    "amdrocm-profiler-base": {"bin/rocprofv3": script("exit 0")},
    "amdrocm-profiler": {
        "bin/rocprof-compute": script('echo "rocprof-compute (rehearsal stand-in)"'),
        "bin/rocprof-sys-sample": script("exit 0"),
    },
    # Per family: the same paths in every family's package, as TheRock builds them.
    "amdrocm-fft": {"lib/librocfft.so.0": "", "lib/libhipfft.so.0": ""},
    "amdrocm-fft-devel": {"lib/cmake/hipfft/hipfft-config.cmake": ""},
    "amdrocm-ccl-devel": {"lib/cmake/rocprim/rocprim-config.cmake": ""},
}


def facts() -> dict[str, Any]:
    return json.loads((FACTS_DIR / "facts.json").read_text())


def package_json() -> dict[str, dict[str, Any]]:
    """package.json's entries as facts.json records them (`Package`, `DEBDepends`,
    `Gfxarch`, as build_package.py reads them)."""
    entries = facts()["packages"]["entries"]
    return {
        name: {"Package": name, "DEBDepends": e["depends"], "Gfxarch": str(e["per_family"])}
        for name, e in entries.items()
    }


def deb_of(name: str, family: str | None) -> str:
    """The recorded Debian name of a package.json package (of `family` if per family)."""
    names = facts()["deb_packages"][name]
    return names if isinstance(names, str) else names[family]


def control(name: str, family: str | None, entry: dict[str, Any]) -> str:
    """DEBIAN/control as build_package.py writes a versioned package's: ROCm
    dependencies renamed to their versioned (and, per family, suffixed) names."""
    known = package_json()
    depends = []
    for dep in entry.get("DEBDepends", []):
        if dep.startswith("amdrocm"):
            per_family = str(known[dep]["Gfxarch"]).lower() == "true"
            depends.append(deb_of(dep, family if per_family else None))
        else:
            depends.append(dep)
    lines = [
        f"Package: {deb_of(name, family)}",
        f"Version: {VERSION}",
        "Architecture: amd64",
        "Maintainer: gmxbench rehearsal <rehearsal@invalid>",
        "Description: stand-in of TheRock 7.12's package of the same name",
    ]
    if depends:
        lines.insert(3, "Depends: " + ", ".join(depends))
    return "\n".join(lines) + "\n"


def build_deb(work: Path, pool: Path, name: str, family: str | None, drop: set[str]) -> None:
    entry = package_json()[name]
    root = work / (deb_of(name, family))
    prefix = root / facts()["prefix"].lstrip("/")
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(control(name, family, entry))
    for rel, content in STAND_INS[name].items():
        if rel in drop:
            continue
        path = prefix / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content.startswith("->"):
            path.symlink_to(content[2:])
        else:
            path.write_text(content)
            path.chmod(0o755 if content.startswith("#!") else 0o644)
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", str(root),
         str(pool / f"{root.name}_{VERSION}_amd64.deb")],
        check=True, capture_output=True,
    )  # fmt: skip


def make_key(gnupg: Path, who: str) -> str:
    """A throwaway signing key in `gnupg`; returns it ASCII-armored, as AMD serves its key."""
    gnupg.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {**os.environ, "GNUPGHOME": str(gnupg)}
    subprocess.run(
        ["gpg", "--batch", "--passphrase", "", "--quick-gen-key", who, "ed25519", "sign", "never"],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    return subprocess.run(
        ["gpg", "--armor", "--export", who], check=True, capture_output=True, text=True, env=env
    ).stdout


def make_repo(
    root: Path, gnupg: Path | None, families: list[str], drop: set[str] = frozenset()
) -> None:
    """An apt repository at `root` (`deb <url> stable main`) with the stand-ins of every
    package the builder installs and their dependencies, for `families`; signed by the
    key in `gnupg`, unsigned when None; `drop` leaves those files out of every package."""
    pool, work = root / "pool" / "main", root / ".work"
    pool.mkdir(parents=True)
    known = package_json()
    for name in STAND_INS:
        if str(known[name]["Gfxarch"]).lower() == "true":
            for family in families:
                build_deb(work, pool, name, family, drop)
        else:
            build_deb(work, pool, name, None, drop)
    shutil.rmtree(work)
    binary = root / "dists" / "stable" / "main" / "binary-amd64"
    binary.mkdir(parents=True)
    index = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "pool"], cwd=root, check=True,
        capture_output=True,
    ).stdout  # fmt: skip
    (binary / "Packages").write_bytes(index)
    (binary / "Packages.gz").write_bytes(gzip.compress(index, mtime=0))
    indexes = {"Packages": index, "Packages.gz": (binary / "Packages.gz").read_bytes()}
    sums = "".join(
        f" {hashlib.sha256(data).hexdigest()} {len(data)} main/binary-amd64/{name}\n"
        for name, data in indexes.items()
    )
    release = root / "dists" / "stable" / "Release"
    release.write_text(
        "Origin: gmxbench rehearsal\nLabel: TheRock 7.12 stand-in\nSuite: stable\n"
        f"Codename: stable\nArchitectures: amd64\nComponents: main\n"
        f"Date: {formatdate(usegmt=True)}\nSHA256:\n{sums}"
    )
    if gnupg is not None:
        env = {**os.environ, "GNUPGHOME": str(gnupg)}
        subprocess.run(
            ["gpg", "--batch", "--yes", "--clearsign", "-o", str(release.parent / "InRelease"),
             str(release)], check=True, capture_output=True, env=env,
        )  # fmt: skip
