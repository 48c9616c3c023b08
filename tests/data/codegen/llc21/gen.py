"""The kernels of LLVM's occupancy-levels.ll and agpr-register-count.ll, regenerated.

Same IR bodies and attributes as the two tests; prints the module to stdout.
"""

VGPRS = (24, 28, 32, 36, 40, 44, 48, 56, 64, 72, 80, 84, 88, 96, 100, 112, 128, 144, 168)
GROUP_SIZES = ((3, 64), (4, 96), (5, 128), (6, 192), (7, 256), (8, 512), (9, 1024), (10, 32))
AGPR_KERNELS = (
    ("kernel_32_agprs", ("v8", "a31")),
    ("kernel_0_agprs", ("v0",)),
    ("kernel_40_vgprs", ("v39", "a15")),
    ("kernel_max_gprs", ("v255", "a255")),
)
STORE_8252 = "  store volatile i8 1, ptr addrspace(3) @lds8252\n"
out = []


def kernel(name: str, body: str, attr: str) -> None:
    out.append(f"define amdgpu_kernel void @{name}() {attr} {{\n{body}  ret void\n}}\n")


def clobber(reg: str) -> str:
    return f'  call void asm sideeffect "", "~{{{reg}}}" ()\n'


kernel("max_occupancy", "", "#10")
for n in (*VGPRS, 200, 256):
    kernel(f"used_{n}_vgprs", clobber(f"v{n - 1}"), "#10")
for n in (80, 88, 100, 101):
    kernel(f"used_{n}_sgprs", clobber(f"s{n - 1}"), "#10")
for n in (6552, 6556, 13112):
    out.append(f"@lds{n} = internal addrspace(3) global [{n} x i8] poison, align 4\n")
    kernel(f"used_lds_{n}", f"  store volatile i8 1, ptr addrspace(3) @lds{n}\n", "")
out.append("@lds8252 = internal addrspace(3) global [8252 x i8] poison, align 4\n")
for i, size in GROUP_SIZES:
    kernel(f"used_lds_8252_max_group_size_{size}", STORE_8252, f"#{i}")
for name, regs in AGPR_KERNELS:
    kernel(name, "".join(clobber(r) for r in regs), "#11")
for i, size in GROUP_SIZES:
    out.append(f'attributes #{i} = {{ "amdgpu-flat-work-group-size"="1,{size}" }}\n')
out.append('attributes #11 = { nounwind noinline "amdgpu-flat-work-group-size"="1,512" }\n')
print("".join(out))
