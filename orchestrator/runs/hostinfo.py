"""What the host looked like during a run: recorded, and warned about when not pinned.

The field report's methodology asks for a `performance` CPU governor and a pinned GPU
performance level before any A/B; we cannot set them (that needs root on the host and
changes the machine), but every result says whether they were set.

`NoiseSampler` records what else the machine did while a run ran (`HostNoise`): the CPU
time of every other process, read from /proc every second (so a compile job beside the
run is named), the CPU steal a hypervisor took, the load average, and the other running
containers. Two runs of one image on a busy 2-core machine differed by 23 % here; the
report says which runs shared the machine instead of leaving the reader to guess.
"""

from __future__ import annotations

import os
import platform as platform_module
import re
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, Field

from orchestrator.platforms.roles import Platform


class HostInfo(BaseModel):
    hostname: str
    kernel: str
    cpu_model: str | None = None
    cpu_count: int | None = None
    cpu_governor: str | None = None
    gpu_model: str | None = None
    gpu_driver: str | None = None
    gpu_perf_level: str | None = None
    #: The GPU's target (gfx1201): which target's code a several-target build ran.
    gpu_target: str | None = None
    warnings: list[str] = Field(default_factory=list)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


def collect(platform: Platform, sys_root: Path = Path("/")) -> HostInfo:
    """The host now, with a warning for each thing that makes timings less repeatable."""
    cpuinfo = _read(sys_root / "proc/cpuinfo") or ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    info = HostInfo(
        hostname=socket.gethostname(),
        kernel=platform_module.release(),
        cpu_model=model.group(1).strip() if model else None,
        cpu_count=len(re.findall(r"^processor\s*:", cpuinfo, re.MULTILINE)) or None,
        cpu_governor=_read(sys_root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    )
    if info.cpu_governor is None:
        info.warnings.append(
            "CPU frequency governor not readable (no cpufreq: a VM or container?); "
            "clocks may vary between runs"
        )
    elif info.cpu_governor != "performance":
        info.warnings.append(
            f"CPU governor is {info.cpu_governor!r}, not 'performance': run "
            f"`sudo cpupower frequency-set -g performance` before benchmarking"
        )
    devices = platform.run.devices(sys_root)
    info.gpu_model, info.gpu_driver = devices.gpu_model, devices.gpu_driver
    info.gpu_perf_level, info.gpu_target = devices.gpu_perf_level, devices.gpu_target
    info.warnings += devices.warnings
    return info


#: Other processes using this many CPUs on average make a run's number untrustworthy.
OTHER_CPUS_LIMIT = 0.25
#: CPU steal (percent of all CPU time) beyond which the hypervisor is said to interfere.
STEAL_LIMIT_PCT = 2.0
#: Seconds between samples; a process that lives less than this may go unseen.
SAMPLE_SECONDS = 1.0


class ProcessLoad(BaseModel):
    """One other program (by its command name) and the CPUs it used on average."""

    name: str
    cpus: float


class HostNoise(BaseModel):
    """What else ran on the machine during one run, sampled from /proc while it ran.

    `other_cpus` counts every process outside the run's container and this tool (the
    engine's own daemons included); `steal_pct` is the CPU time a hypervisor gave to other
    guests. `warnings` says, in words, why the run's number is not to be trusted.
    """

    samples: int
    seconds: float
    cpu_count: int
    run_threads: int
    other_cpus: float
    other_cpus_max: float
    top_others: list[ProcessLoad] = Field(default_factory=list)
    steal_pct: float | None = None
    load_start: float | None = None
    load_end: float | None = None
    other_containers: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def shared(self) -> bool:
        return bool(self.warnings)


#: One process in one sample: (command name, start time in ticks since boot, CPU ticks,
#: parent pid, session id).
_Proc = tuple[str, int, int, int, int]


class _Sample:
    """/proc at one instant: every process's CPU ticks, the CPU totals and the load."""

    def __init__(self, proc: Path) -> None:
        self.when = _uptime(proc)  # seconds since boot: the clock of the processes' start times
        self.uptime_ticks = int(self.when * os.sysconf("SC_CLK_TCK"))
        self.cpu_total, self.cpu_steal = _cpu_times(proc)
        self.load = _load(proc)
        self.processes: dict[int, _Proc] = {}
        with os.scandir(proc) as entries:
            for entry in entries:
                if entry.name.isdigit() and (stat := _proc_stat(Path(entry.path))) is not None:
                    self.processes[int(entry.name)] = stat


def _uptime(proc: Path) -> float:
    return float((_read(proc / "uptime") or "0").split()[0])


def _cpu_times(proc: Path) -> tuple[int, int]:
    """(all CPU ticks, steal ticks) from the `cpu` line of /proc/stat (proc(5))."""
    for line in (_read(proc / "stat") or "").splitlines():
        if line.startswith("cpu "):
            fields = [int(v) for v in line.split()[1:9]]  # user … steal (guest is in user)
            fields += [0] * (8 - len(fields))
            return sum(fields), fields[7]
    return 0, 0


def _load(proc: Path) -> float | None:
    text = _read(proc / "loadavg")
    return float(text.split()[0]) if text else None


def _proc_stat(pid_dir: Path) -> _Proc | None:
    """(comm, starttime, utime + stime, ppid, session) of /proc/<pid>/stat; None when it
    just vanished."""
    try:
        text = (pid_dir / "stat").read_text(errors="replace")
    except OSError:
        return None
    close = text.rfind(")")
    fields = text[close + 2 :].split()  # from field 3 (state) on
    if close < 0 or len(fields) < 20:
        return None
    name = text[text.find("(") + 1 : close]
    return name, int(fields[19]), int(fields[11]) + int(fields[12]), int(fields[1]), int(fields[3])


def _native_run(me: int, processes: Mapping[int, _Proc]) -> set[int]:
    """The processes of a native run: this tool's descendants in a session of their own
    (the native executor starts each run as one, as a container's processes are the
    container's). Other children of the tool, in its own session, stay others."""
    children: dict[int, list[int]] = {}
    for pid, (*_, parent, _session) in processes.items():
        children.setdefault(parent, []).append(pid)
    own_session = processes[me][4] if me in processes else os.getsid(0)
    found, todo = set(), [me]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return {pid for pid in found if processes[pid][4] != own_session}


class NoiseSampler:
    """Samples /proc at start, every `interval` seconds in a thread, and at stop.

    `containers` lists the running containers (id to name); the one named
    `own_container` is the run itself and its processes are not "others". Use it as a
    context manager around the container run, then read `result()`.
    """

    def __init__(
        self,
        *,
        run_threads: int,
        containers: Callable[[], Mapping[str, str] | None] | None = None,
        own_container: str | None = None,
        interval: float = SAMPLE_SECONDS,
        proc: Path = Path("/proc"),
    ) -> None:
        self.run_threads, self.interval, self.proc = run_threads, interval, proc
        self._containers, self._own_name = containers, own_container
        self._own_id: str | None = None
        self._others: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._first: _Sample | None = None
        self._last: _Sample | None = None
        self._ours: dict[tuple[int, int], bool] = {}  # (pid, start) -> in the run's container
        self._by_name: dict[str, int] = {}  # other processes' CPU ticks, by command name
        self._peak = 0.0
        self._samples = 0

    def __enter__(self) -> NoiseSampler:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="noise-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sample(final=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def _look_at_containers(self) -> None:
        listed = self._containers() if self._containers is not None else None
        for cid, name in (listed or {}).items():
            if name.lstrip("/") == self._own_name:
                self._own_id = cid
            else:
                self._others.add(name.lstrip("/"))

    def _is_ours(self, pid: int, start: int) -> bool:
        key = (pid, start)
        if key not in self._ours:
            if self._own_id is None:
                return False  # not known yet: decide at a later sample
            cgroup = _read(self.proc / str(pid) / "cgroup") or ""
            self._ours[key] = self._own_id in cgroup
        return self._ours[key]

    def sample(self, *, final: bool = False) -> None:
        """Take one sample and add what happened since the previous one."""
        if self._first is None or final or self._own_id is None:
            self._look_at_containers()
        now = _Sample(self.proc)
        self._samples += 1
        prev = self._last
        self._first, self._last = self._first or now, now
        if prev is None:
            return
        me, ticks = os.getpid(), 0
        mine = _native_run(me, now.processes)
        for pid, (name, start, cpu, *_) in now.processes.items():
            before = prev.processes.get(pid)
            if before is not None and before[1] == start:
                used = cpu - before[2]
            else:  # started since the last sample (or a reused pid): all of its time is new
                used = cpu if start >= prev.uptime_ticks else 0
            if used <= 0 or pid == me or pid in mine or self._is_ours(pid, start):
                continue
            self._by_name[name] = self._by_name.get(name, 0) + used
            ticks += used
        span = now.when - prev.when
        if span > 0:
            self._peak = max(self._peak, ticks / os.sysconf("SC_CLK_TCK") / span)

    def result(self) -> HostNoise:
        """What was seen between the first and the last sample, with warnings in words."""
        first, last = self._first, self._last
        seconds = (last.when - first.when) if first and last else 0.0
        hz = os.sysconf("SC_CLK_TCK")
        per_name = {n: t / hz / seconds for n, t in self._by_name.items()} if seconds else {}
        top = sorted(per_name.items(), key=lambda item: -item[1])[:5]
        steal = None
        if first and last and last.cpu_total > first.cpu_total:
            steal = 100 * (last.cpu_steal - first.cpu_steal) / (last.cpu_total - first.cpu_total)
        noise = HostNoise(
            samples=self._samples,
            seconds=round(seconds, 3),
            cpu_count=os.cpu_count() or 1,
            run_threads=self.run_threads,
            other_cpus=round(sum(per_name.values()), 3),
            other_cpus_max=round(self._peak, 3),
            top_others=[ProcessLoad(name=n, cpus=round(c, 3)) for n, c in top if c >= 0.005],
            steal_pct=None if steal is None else round(steal, 2),
            load_start=first.load if first else None,
            load_end=last.load if last else None,
            other_containers=sorted(self._others),
        )
        noise.warnings = noise_warnings(noise)
        return noise


def noise_warnings(noise: HostNoise) -> list[str]:
    """Why a run's number is not to be trusted, one reason a line; empty when it is."""
    found = []
    if noise.other_cpus >= OTHER_CPUS_LIMIT:
        top = ", ".join(f"{p.name} {p.cpus:.2f}" for p in noise.top_others[:3])
        found.append(
            f"other processes used {noise.other_cpus:.2f} CPUs on average (peak "
            f"{noise.other_cpus_max:.2f}; {top}) while the run used {noise.run_threads} of "
            f"{noise.cpu_count} cores"
        )
    if noise.steal_pct is not None and noise.steal_pct >= STEAL_LIMIT_PCT:
        found.append(
            f"the hypervisor gave {noise.steal_pct:.1f}% of CPU time to other guests (steal)"
        )
    if noise.other_containers:
        count, names = len(noise.other_containers), ", ".join(noise.other_containers[:3])
        more = f" and {count - 3} more" if count > 3 else ""
        were = "other container was" if count == 1 else "other containers were"
        found.append(f"{count} {were} running ({names}{more})")
    return found
