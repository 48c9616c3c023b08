"""Trim `cuobjdump -sass` / `-res-usage` outputs of libgromacs.so to the fixtures here.

Keeps the ELF blocks that hold a chosen function, in their order, each with its header and
only the chosen functions' entries, every kept line verbatim (README.md says why and how):

    python3 trim.py sass-A.txt res-usage-A.txt A
"""

from __future__ import annotations

import lzma
import re
import sys
from pathlib import Path

#: Mangled-name prefixes kept: the 18 libgromacs kernels the water benchmark ran (ncu),
#: cub's EmptyKernel (in many units: the duplicate name), a capped nonbonded FEP kernel
#: that gains a stack frame under -maxrregcount=48, and the small halo kernels.
KEEP = (
    "_Z12dummy_kernelv",
    "_ZN3gmx24nbnxnKernelBucketSciSort",
    "_ZN3gmx28nbnxn_gpu_x_to_nbat_x_kernel",
    "_ZN3gmx40nbnxn_kernel_ElecEw_VdwLJCombGeom_F_cuda",
    "_ZN3gmx41nbnxn_kernel_ElecEw_VdwLJCombGeom_VF_cuda",
    "_ZN3cub17CUB_300001_SM_9006detail4scan20DeviceScanInitKernel",
    "_ZN3cub17CUB_300001_SM_9006detail4scan16DeviceScanKernel",
    "_ZN3gmx14leapFrogKernel",
    "_ZN3gmx23nbnxn_kernel_prune_cuda",
    "_ZN3gmx12reduceKernelILb1ELb0E",
    "_ZN3gmx12settleKernelILb1E",
    "_Z17pme_gather_kernelILi4ELb1ELb1ELi1ELb0EL14ThreadsPerAtom0E",
    "_Z16pme_solve_kernelIL12GridOrdering1ELb0ELi0E",
    "_Z16pme_solve_kernelIL12GridOrdering1ELb1ELi0E",
    "_Z28pme_spline_and_spread_kernelILi4ELb1ELb1ELb1ELb1ELi1ELb0EL14ThreadsPerAtom0E",
    "_ZN3cub17CUB_300001_SM_9006detail11EmptyKernel",
    "_ZN3gmx41nbfe_kernel_ElecEwTwinCut_VdwLJPsw_F_cuda",
    "_ZN3gmx19unpackRecvBufKernel",
    "_ZN3gmx17packSendBufKernel",
)
ELF = re.compile(r"(?m)^(?=Fatbin (?:elf|ptx) code:)")
SASS_FUNCTION = re.compile(r"(?m)^(?=\t\tFunction : )")
RES_FUNCTION = re.compile(r"(?m)^(?= Function )")


def _kept(name_line: str) -> bool:
    name = name_line.split()[2] if name_line.startswith("\t\t") else name_line.split()[1]
    return name.rstrip(":").startswith(KEEP)


def trim(
    text: str, function: re.Pattern[str], chosen_blocks: set[int] | None
) -> tuple[str, set[int]]:
    """The kept blocks' headers and chosen functions; which blocks (by ELF index) were kept."""
    out, kept = [], set()
    for index, block in enumerate(p for p in ELF.split(text) if p.startswith("Fatbin elf")):
        head, *functions = function.split(block)
        mine = [f for f in functions if _kept(f)]
        if (chosen_blocks is None and mine) or (chosen_blocks and index in chosen_blocks):
            out.append(head + "".join(mine))
            kept.add(index)
    return "".join(out), kept


def main() -> None:
    sass_path, res_path, side = sys.argv[1:4]
    here = Path(__file__).parent
    sass, blocks = trim(Path(sass_path).read_text(), SASS_FUNCTION, None)
    res, _ = trim(Path(res_path).read_text(), RES_FUNCTION, blocks)
    for name, text in ((f"sass-{side}.txt.xz", sass), (f"res-usage-{side}.txt.xz", res)):
        (here / name).write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))


if __name__ == "__main__":
    main()
