"""The codegen of a GROMACS image, collected: which code its compiler made, per kernel.

Every GROMACS image keeps what its compiler produced (ROCm: each HIP object's GPU code
objects; CPU: libgromacs.so itself), so its codegen is collected by running the probe
(`payloads/codegen_probe.py`) inside a container of the image, with the image's own LLVM
or binutils. It is collected when the image is built and cached as
`results/images/<tag>.codegen.json`; an image keeps everything needed to collect it
again, on any machine it is moved to, by any later version of the probe.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from orchestrator.codegen.model import Codegen, parse_probe_output
from orchestrator.core.errors import UserError
from orchestrator.core.files import write_atomic
from orchestrator.engine import Client
from orchestrator.images.catalog import probe
from orchestrator.images.provenance import ImageRecord
from orchestrator.platforms import get
from orchestrator.platforms.base import KEPT
from orchestrator.store.layout import codegen_path

#: Longest a probe may take (all of GROMACS' kernels: seconds to a minute).
PROBE_TIMEOUT = 1800


def _prefix(record: ImageRecord) -> str:
    return f"/opt/gromacs/{record.build}"


def run_probe(client: Client, image_id: str, record: ImageRecord) -> Codegen:
    """Run the probe in `image_id` (an image with `record`'s labels); its codegen."""
    return probe_codegen(
        lambda command, stderr: probe(
            client, image_id, command, timeout=PROBE_TIMEOUT, stderr=stderr
        ),
        record,
        _prefix(record),
    )


#: Runs a command where a build is installed (in its image, or on this host), with or
#: without its stderr: (exit code, output).
ProbeRun = Callable[[list[str], bool], tuple[int, str]]


def probe_codegen(
    run: ProbeRun, record: ImageRecord, prefix: str, kept: str = KEPT, where: str = "image"
) -> Codegen:
    """The codegen of the build of `record` installed at `prefix`, its device code in
    `kept`: the probe run by `run`, in the build's image or natively."""
    platform = get(record.platform or "cpu")
    command = platform.codegen.codegen_probe(
        "codegen", prefix, record.rocm_stack, release=record.rocm_version, kept=kept
    )
    code, out = run(command, False)
    if code != 0:
        _, why = run(command, True)
        raise UserError(
            f"The codegen probe failed in {record.tag} (exit {code}): "
            f"{why.strip().splitlines()[-1][:300] if why.strip() else 'no output'}. Images "
            "built before code objects were kept cannot be fingerprinted; build it again."
        )
    return parse_probe_output(
        out, source=f"{where} {record.tag}", build=record.tag, platform=record.platform
    )


def save(results_dir: Path, codegen: Codegen, tag: str) -> Path:
    return write_atomic(codegen_path(results_dir, tag), codegen.model_dump_json() + "\n")


def function_asm(
    client: Client, record: ImageRecord, name: str, unit: str | None, arch: str | None = None
) -> str:
    """One function's normalised code in the image of `record` (for `codegen diff --asm`),
    for target `arch` where the image holds several."""
    platform = get(record.platform or "cpu")
    command = platform.codegen.codegen_probe(
        "asm", _prefix(record), record.rocm_stack, name, unit, arch, record.rocm_version
    )
    code, out = probe(client, record.id, command, timeout=PROBE_TIMEOUT, stderr=False)
    if code != 0:
        raise UserError(f"Could not print the code of {name} in {record.tag} (exit {code}).")
    return out


def functions_asm(
    client: Client,
    record: ImageRecord,
    names: Sequence[str],
    unit: str | None,
    arch: str | None = None,
) -> dict[str, str]:
    """Several functions' normalised code from one probe of `unit` (disassembling a big
    unit is the cost, not the functions); a name not found exactly once is left out."""
    if len(names) == 1:
        return {names[0]: function_asm(client, record, names[0], unit, arch)}
    platform = get(record.platform or "cpu")
    command = platform.codegen.codegen_probe(
        "asm", _prefix(record), record.rocm_stack, names, unit, arch, record.rocm_version
    )
    code, out = probe(client, record.id, command, timeout=PROBE_TIMEOUT, stderr=False)
    try:
        texts = json.loads(out) if code == 0 else None
    except ValueError:
        texts = None
    if not isinstance(texts, dict):
        raise UserError(f"Could not print the code of {len(names)} functions in {record.tag} "
                        f"(exit {code}).")  # fmt: skip
    return {str(k): str(v) for k, v in texts.items()}
