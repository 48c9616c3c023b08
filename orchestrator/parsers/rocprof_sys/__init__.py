"""Parse a rocprof-sys (formerly Omnitrace) output directory into a :class:`SystemTrace`.

rocprof-sys writes ``<OUTPUT_PATH>[/<TIMESTAMP>]/[<PREFIX>]<DATA_NAME>[-<PID>].<EXT>``
(``docs/how-to/understanding-rocprof-sys-output.rst``): ``metadata[-<pid>].json`` (settings,
environment, the list of files it wrote), ``perfetto-trace[-<pid>].proto`` (the timeline),
rocpd ``.db`` databases on newer releases, and one timemory file per component, of which
``wall_clock[-<pid>].json`` is the flat call-site profile:
``["timemory"]["wall_clock"]["ranks"][i]["graph"][j]`` with ``prefix`` (``|0>>> |_name``:
thread 0, ``|_`` per nesting level; ``|MM|NN>>>`` is rank MM, thread NN), ``depth``,
``entry.laps`` and ``stats{sum, count, min, max, mean, stddev}`` in ``unit_repr`` units.
The docs spell it both ``wall_clock`` and ``wall-clock``; both are globbed, and the text
table ``wall_clock.txt`` is read when no JSON was written.

The flat graph lists call sites in depth-first order, so a call site's children are the
entries that follow it one level deeper; its *self* time is its total minus theirs,
floored at zero as timemory's own ``% SELF`` column is (worker threads' regions are nested
under the parallel region that started them, so children can outlast their parent).
"""

from orchestrator.parsers.rocprof_sys.models import FunctionRow, OutputFile, SystemTrace
from orchestrator.parsers.rocprof_sys.output import find_output_dir, parse_output, perfetto_hint
from orchestrator.parsers.rocprof_sys.wall_clock import parse_wall_clock_json, parse_wall_clock_text

__all__ = [
    "FunctionRow",
    "OutputFile",
    "SystemTrace",
    "find_output_dir",
    "parse_output",
    "parse_wall_clock_json",
    "parse_wall_clock_text",
    "perfetto_hint",
]
