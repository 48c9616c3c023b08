"""Images: one building block per image kind, each owning its template's context, its
compiler, its tag and its checks (hpccm's `building_blocks/` are the model).

`base` (debootstrap) → `builder` → `toolchain_package` / `toolchain_llvm` → `gromacs`;
each finds or builds its image through `ensure` (one sequence: find by inputs, build,
verify, label, tag); `catalog` finds, lists, labels and tags them; `provenance` is their labels and
lockfiles; `render` reads the templates of the top-level `images/`; `blocks` says which
block owns which template.
"""
