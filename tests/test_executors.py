"""What a batch job is handed (settings as `ORCH_*`, never a secret), what SLURM's words
parse to, and matrix files: the parts of the SLURM executor and `matrix` that need no cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import SlurmSettings, environment_of, load_settings
from orchestrator.runs.executors.slurm import _fields
from orchestrator.workflows.matrix import _plan, _resources, load_matrix

REPO = Path(__file__).resolve().parent.parent


def test_an_unknown_executor_is_the_settings_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_EXECUTOR", "pbs")
    with pytest.raises(UsageError) as err:
        load_settings()
    assert (
        "ORCH_EXECUTOR (got 'pbs'): Input should be 'local', 'slurm' or 'native'"
        in err.value.message
    )


def test_settings_reach_the_job_whole_and_the_secrets_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(
        platform="rocm", results_dir=tmp_path / "results", jobs=3, gpu_arch="gfx942",
        recipes_dirs=[tmp_path / "recipes", REPO / "recipes"], executor="slurm",
        slurm=SlurmSettings(partition="mi300", gres="gpu:1", extra_args=["--mem=8G"]),
        webhook_url="https://hooks.example/secret-token",
        database_url="postgresql://bench:hunter2@db/bench",
    )  # fmt: skip
    env = environment_of(settings, frozenset({"executor"}))
    assert "ORCH_EXECUTOR" not in env
    assert not any("secret-token" in v or "hunter2" in v for v in env.values())
    assert not {"ORCH_WEBHOOK_URL", "ORCH_DATABASE_URL"} & set(env)
    assert env["ORCH_RESULTS_DIR"] == str((tmp_path / "results").resolve())
    for name in [n for n in list(os.environ) if n.startswith("ORCH_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    again = load_settings()
    skip = {"webhook_url", "database_url", "executor"}
    assert again.model_dump(exclude=skip) == settings.model_dump(exclude=skip)
    assert again.executor == "local" and again.webhook_url is None


def test_scontrol_oneliner_fields_keep_values_with_spaces() -> None:
    line = (
        "JobId=7 JobName=gmxbench:stable__water__t JobState=NODE_FAIL Reason=NodeDown "
        "Dependency=(null) ExitCode=0:0 NodeList=node1 Comment=gmxbench run stable__water__t "
        "StdOut=/r/.scheduler/x.out"
    )
    fields = _fields(line)
    assert fields["JobState"] == "NODE_FAIL" and fields["Reason"] == "NodeDown"
    assert fields["Comment"] == "gmxbench run stable__water__t"
    assert fields["StdOut"] == "/r/.scheduler/x.out" and fields["NodeList"] == "node1"


def test_matrix_file_errors_name_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "nightly.toml"
    with pytest.raises(UsageError, match=r"nightly.toml does not exist"):
        load_matrix(path)
    path.write_text("systems = [\n")
    with pytest.raises(UsageError, match=r"is not valid TOML"):
        load_matrix(path)
    path.write_text('systems = ["water"]\nrepeats = 0\ncolour = "red"\n')
    with pytest.raises(UsageError) as caught:
        load_matrix(path)
    text = caught.value.message
    assert "builds: Field required" in text and "repeats:" in text and "colour:" in text
    assert "see `gmxbench matrix --help`" in text


def test_matrix_chains_interleave_builds_per_system_and_gpu_type(tmp_path: Path) -> None:
    path = tmp_path / "nightly.toml"
    path.write_text(
        'systems = ["water:3k", "bandwidth:8MiB"]\nbuilds = ["a", "b"]\nrepeats = 3\n'
        '[[gpus]]\nname = "mi300x"\nconstraint = "mi300x"\ngres = "gpu:1"\n'
        '[[gpus]]\nname = "gfx1201"\npartition = "navi"\nbuilds = ["c", "d"]\n'
    )
    spec = load_matrix(path)
    assert spec.name == "nightly"
    settings = load_settings(platform="cpu", results_dir=tmp_path / "results")
    chains, cells = _plan(settings, spec, "n1")
    assert len(chains) == 4 and len(cells) == 8
    first = chains[0]
    assert [job.request.build for job, _ in first] == ["a", "b", "b", "a", "a", "b"]
    assert [job.request.tag for job, _ in first[:2]] == ["n1-mi300x-r1", "n1-mi300x-r1"]
    resources = first[0][0].resources
    assert resources is not None and resources.constraint == "mi300x"
    assert resources.gres == "gpu:1" and resources.partition is None
    navi = chains[2]
    assert {job.request.build for job, _ in navi} == {"c", "d"}
    assert navi[0][0].resources == _resources(spec.gpus[1])
