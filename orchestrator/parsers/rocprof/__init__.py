"""Parse rocprofv3 / legacy rocprof kernel CSVs into a per-category :class:`Breakdown`.

rocprofv3's ``rocpd`` databases (ROCm 7.0's default) are read by :mod:`.rocpd` and summed
here the same way, so both formats of one run give the same breakdown.

Columns are found by header *name* (case and ``_`` insensitive), never by position: the
kernel_trace layout changed from 18 to 19 to 22 columns across ROCm 6.x-7.x, ``rocpd2csv``
prepends ``Guid`` and renames ``LDS_Block_Size`` to ``Lds_Block_Size``, and legacy rocprof
uses ``KernelName``/``BeginNs``/``EndNs``. Traces are streamed a block of lines at a time:
a block in rocprofv3's quoting (texts quoted, numbers not) is checked by counting quotes
and commas, then cut with ``str.split`` (``blocks.Shape``: about twice the speed of the
stdlib ``csv`` module on a 1M-row trace); any other block is read by the ``csv`` module,
and both give the same rows. Each distinct kernel name is categorized once, and every
call's duration is kept as an integer in one ``array('q')`` per name (8 bytes a call):
totals stay exact and the median/p10/p90 of each kernel's calls come for free (sorting one
name at a time).

Real files are messier than the format documents:

* Legacy ``results.stats.csv`` files exist whose kernel names are not quoted although they
  contain commas; such a row has more cells than the header, and the numeric columns are
  then read from the right (the name is the only free-text column).
* Legacy rocprof lists ``<barrier packet>`` and ``Unknown command type`` rows among the
  kernels; they are reported in the breakdown's ``excluded`` list, not as kernel time.
* rocprofv3 ``counter_collection.csv`` (``--pmc``) has one row *per counter* per dispatch,
  all with the same timestamps. It is accepted and each dispatch counted once (first row
  per ``Dispatch_Id``): a user who passes it wants the kernel times it holds, and refusing
  would leave nothing to look at. Its label says so, because counter collection
  serialises dispatches and perturbs them: compare it only with another counter file.
"""

from orchestrator.parsers.breakdown import Breakdown, CategoryTotal, KernelRow
from orchestrator.parsers.rocprof.combine import find_rocprof_files, parse_kernel_csv, parse_rocprof

__all__ = [
    "Breakdown",
    "CategoryTotal",
    "KernelRow",
    "find_rocprof_files",
    "parse_kernel_csv",
    "parse_rocprof",
]
