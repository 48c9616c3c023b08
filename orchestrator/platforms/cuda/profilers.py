"""Profiling on the CUDA platform: none yet beyond md.log's cycle accounting."""

from __future__ import annotations

from pathlib import Path

from orchestrator.parsers.breakdown import Breakdown
from orchestrator.parsers.mdlog import MdLog
from orchestrator.platforms.base import ProfileMode
from orchestrator.platforms.roles import ProfilerRole


class CudaProfiler(ProfilerRole):
    """mdrun as it is; no per-category breakdown from a profiler yet."""

    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> Breakdown | None:
        return None
