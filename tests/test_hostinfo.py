"""Host noise: what else ran beside a run, from real /proc and from a /proc tree made here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.runs import hostinfo
from orchestrator.runs.hostinfo import HostNoise, NoiseSampler, ProcessLoad, noise_warnings

HZ = os.sysconf("SC_CLK_TCK")
OURS = "a" * 64  # the run's container id
THEIRS = "b" * 64


def _write_proc(
    root: Path, uptime: float, cpu: str, processes: dict[int, tuple[str, float, float, str]]
) -> None:
    """A /proc tree in the kernel's formats (proc(5)): processes are (comm, started s, CPU s,
    cgroup id); the stat line is a real one from this machine with those fields replaced."""
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        if old.is_dir():
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
    (root / "uptime").write_text(f"{uptime:.2f} 100.00\n")
    (root / "stat").write_text(f"cpu  {cpu}\ncpu0 {cpu}\nprocs_running 3\n")
    (root / "loadavg").write_text("2.50 1.75 0.90 3/180 4242\n")
    real = Path("/proc/self/stat").read_text()
    fields = real[real.rfind(")") + 2 :].split()
    for pid, (comm, started, cpu_s, cgroup) in processes.items():
        fields[11], fields[12] = str(round(cpu_s * HZ * 0.75)), str(round(cpu_s * HZ * 0.25))
        fields[19] = str(round(started * HZ))
        (root / str(pid)).mkdir()
        (root / str(pid) / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
        where = f"/docker/{cgroup}" if cgroup else "/user.slice"
        (root / str(pid) / "cgroup").write_text(f"12:cpu,cpuacct:{where}\n0::{where}\n")


def test_attributes_cpu_to_other_processes_not_to_the_run(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    calls: list[int] = []

    def containers() -> dict[str, str]:
        calls.append(1)
        running = {THEIRS: "someone-elses-build"}
        return running if len(calls) == 1 else {**running, OURS: "gmxbench-run"}

    sampler = NoiseSampler(run_threads=2, containers=containers, own_container="gmxbench-run",
                           proc=proc)  # fmt: skip
    _write_proc(proc, 1000.0, "1000 0 500 8000 0 0 0 100", {
        200: ("cc1plus", 990.0, 10.0, THEIRS),
        300: ("tmux: server) x", 10.0, 5.0, ""),  # a ")" in a command name
    })  # fmt: skip
    sampler.sample()
    _write_proc(proc, 1002.0, "1300 0 550 8100 0 0 0 150", {
        100: ("gmx", 1000.5, 3.0, OURS),  # the run: 2 CPUs, not "others"
        200: ("cc1plus", 990.0, 12.0, THEIRS),  # 1 CPU for 2 s
        300: ("tmux: server) x", 10.0, 5.2, ""),
        400: ("ld", 1001.0, 0.5, ""),  # started after the first sample: all of it counts
        500: ("old", 500.0, 9.0, ""),  # started long before but never seen: unknown, not counted
    })  # fmt: skip
    sampler.sample()
    _write_proc(proc, 1004.0, "1700 0 600 8150 0 0 0 250", {
        100: ("gmx", 1000.5, 7.0, OURS),
        300: ("tmux: server) x", 10.0, 5.3, ""),
        500: ("old", 500.0, 9.1, ""),
    })  # fmt: skip
    sampler.sample(final=True)
    noise = sampler.result()
    assert noise.samples == 3 and noise.seconds == pytest.approx(4.0)
    cpus = {p.name: p.cpus for p in noise.top_others}
    assert cpus == pytest.approx({"cc1plus": 0.5, "ld": 0.125, "tmux: server) x": 0.075,
                                  "old": 0.025})  # fmt: skip
    assert "gmx" not in cpus
    assert noise.other_cpus == pytest.approx(0.725)
    assert noise.other_cpus_max == pytest.approx((2.0 + 0.2 + 0.5) / 2)
    assert noise.steal_pct == pytest.approx(100 * 150 / 1100, abs=0.01)
    assert noise.load_start == noise.load_end == 2.5
    assert noise.other_containers == ["someone-elses-build"]
    assert noise.shared and len(noise.warnings) == 3
    assert noise.warnings[0].startswith("other processes used 0.72 CPUs on average (peak 1.35;")
    assert "cc1plus 0.50" in noise.warnings[0] and "run used 2 of" in noise.warnings[0]
    assert "13.6% of CPU time to other guests (steal)" in noise.warnings[1]
    assert noise.warnings[2] == "1 other container was running (someone-elses-build)"
    assert HostNoise.model_validate_json(noise.model_dump_json()) == noise


def test_a_quiet_host_gives_no_warning() -> None:
    quiet = HostNoise(samples=5, seconds=4.0, cpu_count=2, run_threads=2, other_cpus=0.05,
                      other_cpus_max=0.2, steal_pct=0.3,
                      top_others=[ProcessLoad(name="dockerd", cpus=0.05)])  # fmt: skip
    assert noise_warnings(quiet) == [] and not quiet.shared


def _competitor() -> int:
    """A busy loop that is not this process's descendant (its shell exits at once, so it
    is adopted by init): another user's program, as the sampler sees it."""
    shell = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(shell.stdout.strip())


def test_a_busy_process_beside_the_run_is_seen_and_named() -> None:
    """Real /proc, a real competitor: a busy loop is found, with its name and CPU share."""
    busy = _competitor()
    try:
        time.sleep(0.3)
        with NoiseSampler(run_threads=2, interval=0.5) as sampler:
            time.sleep(2.0)
        comm = Path(f"/proc/{busy}/comm").read_text().strip()
    finally:
        os.kill(busy, 9)
    noise = sampler.result()
    assert noise.samples >= 4 and 1.9 < noise.seconds < 4
    cpus = {p.name: p.cpus for p in noise.top_others}
    assert cpus.get(comm, 0.0) >= 0.3  # a whole core if free; the machine is shared
    assert noise.other_cpus >= cpus[comm] and noise.shared
    assert any(comm in w and "other processes used" in w for w in noise.warnings)


def test_a_native_runs_own_processes_are_not_others() -> None:
    """A native run's mdrun is this tool's child (a grandchild here, under a shell): its
    CPU is the run's, as a container's processes are, not another program's."""
    busy = "open('/proc/self/comm', 'w').write('gmxb-ours')\nwhile True: pass"
    run = subprocess.Popen(["sh", "-c", f'{sys.executable} -c "{busy}"'], start_new_session=True)
    try:
        time.sleep(0.3)
        with NoiseSampler(run_threads=2, interval=0.5) as sampler:
            time.sleep(2.0)
    finally:
        os.killpg(run.pid, 9)  # the shell and its python
        run.wait()
    noise = sampler.result()
    assert noise.samples >= 4
    assert "gmxb-ours" not in {p.name for p in noise.top_others}, noise.top_others


def test_real_proc_reads() -> None:
    total, steal = hostinfo._cpu_times(Path("/proc"))
    assert total > 0 and 0 <= steal <= total
    assert hostinfo._load(Path("/proc")) is not None
    stat = hostinfo._proc_stat(Path(f"/proc/{os.getpid()}"))
    assert stat is not None and stat[2] >= 0
    assert hostinfo._proc_stat(Path("/proc/999999999")) is None


def test_a_child_in_the_tools_own_session_is_another_program() -> None:
    """Only a run started in a session of its own (the native executor's) is the run: a
    child in the tool's own session, like a test's competitor, is noise."""
    busy = "open('/proc/self/comm', 'w').write('gmxb-other')\nwhile True: pass"
    child = subprocess.Popen([sys.executable, "-c", busy])
    try:
        time.sleep(0.3)
        with NoiseSampler(run_threads=2, interval=0.5) as sampler:
            time.sleep(2.0)
    finally:
        child.kill()
        child.wait()
    assert "gmxb-other" in {p.name for p in sampler.result().top_others}
