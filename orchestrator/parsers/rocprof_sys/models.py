"""The records of a rocprof-sys run: :class:`SystemTrace` and the rows and files it lists."""

from __future__ import annotations

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1


class OutputFile(BaseModel):
    """One file ``metadata.json`` says was written."""

    kind: str = Field(description="metadata's group: json, text, protobuf, ...")
    key: str = Field(description="the component or writer, e.g. wall_clock, perfetto")
    path: str = Field(description="as listed (often absolute, on the profiled machine)")
    relative: str | None = Field(None, description="where it is, relative to the output dir")


class FunctionRow(BaseModel):
    """One call site of the flat wall-clock profile."""

    name: str
    rank: int | None = None
    thread: int | None = None
    depth: int
    count: int
    total_s: float
    mean_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    stddev_s: float | None = None
    self_s: float | None = None
    source: str = Field(description="the file it was read from")


class SystemTrace(BaseModel):
    """What a rocprof-sys run left, summarised for ``result.json`` and reports."""

    schema_version: int = SCHEMA_VERSION
    source: str = "rocprof-sys"
    output_dir: str = Field(description="the directory given; every path is relative to it")
    tool_version: str | None = None
    timemory_version: str | None = None
    rocm_version: str | None = None
    launched: str | None = Field(None, description="LAUNCH_DATE LAUNCH_TIME from metadata")
    command_line: list[str] = Field(default_factory=list)
    settings: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    metadata_files: list[str] = Field(default_factory=list)
    files: list[str] = Field(
        default_factory=list, description="every file under output_dir, relative to it"
    )
    listed_files: list[OutputFile] = Field(
        default_factory=list, description="the files metadata says were written"
    )
    perfetto_traces: list[str] = Field(default_factory=list, description="relative paths")
    rocpd_databases: list[str] = Field(default_factory=list, description="relative paths")
    wall_clock_files: list[str] = Field(default_factory=list)
    wall_clock_s: float | None = Field(
        None, description="the longest top-level (depth 0) region: the program's main"
    )
    functions: list[FunctionRow] = Field(default_factory=list, description="by total, desc")
    notes: list[str] = Field(default_factory=list)
