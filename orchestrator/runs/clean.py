"""`runs clean`: what dead runs left behind, removed; nothing else touched.

A run whose process was SIGKILLed (SLURM after `KillWait`, the OOM killer) leaves its
container running, holding the CPU or GPU the next job gets, and its record saying
"in progress". Here each container labelled as a run of ours is removed exactly when
its owner process is known to be dead, and each abandoned record is closed as failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from orchestrator import engine
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.provenance import OWNER_LABEL, ROLE_LABEL, RUN_LABEL
from orchestrator.runs.liveness import Owner
from orchestrator.store.runstore import RunStore


@dataclass
class Cleaned:
    """What `clean_runs` did (or, with `dry_run`, would do)."""

    removed: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)


def clean_runs(client: Client, settings: Settings, dry_run: bool = False) -> Cleaned:
    """Remove containers of dead runs and close abandoned records in `results_dir`."""
    done = Cleaned()
    for container in engine.containers(client, f"{ROLE_LABEL}=run"):
        name = container.labels.get(RUN_LABEL, container.name)
        why = _keep_reason(container.labels.get(OWNER_LABEL))
        if why is not None:
            done.kept.append((name, why))
            continue
        if not dry_run:
            engine.remove_container(client, container.id)
        done.removed.append(name)
    runs = RunStore(settings.results_dir)
    for path in runs.runs():
        status = runs.status(path)
        if status.state != "abandoned" or status.result is None:
            continue
        if not dry_run:
            status.result.failure = f"abandoned: {status.why}"
            runs.save(path, status.result)
        done.closed.append(path.name)
    return done


def _keep_reason(raw: str | None) -> str | None:
    """Why a run container must stay (its owner lives, or cannot be judged here)."""
    if raw is None:
        return "it names no owner process (made by an older version); remove it by hand"
    try:
        owner = Owner.model_validate_json(raw)
    except ValidationError:
        return f"its {OWNER_LABEL} label is unreadable; remove it by hand if it is stale"
    alive = owner.alive()
    if alive:
        return f"its process ({owner.describe()}) is still running"
    if alive is None:
        return f"its process ({owner.describe()}) is on another machine; clean it there"
    return None
