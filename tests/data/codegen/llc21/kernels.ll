define amdgpu_kernel void @max_occupancy() #10 {
  ret void
}
define amdgpu_kernel void @used_24_vgprs() #10 {
  call void asm sideeffect "", "~{v23}" ()
  ret void
}
define amdgpu_kernel void @used_28_vgprs() #10 {
  call void asm sideeffect "", "~{v27}" ()
  ret void
}
define amdgpu_kernel void @used_32_vgprs() #10 {
  call void asm sideeffect "", "~{v31}" ()
  ret void
}
define amdgpu_kernel void @used_36_vgprs() #10 {
  call void asm sideeffect "", "~{v35}" ()
  ret void
}
define amdgpu_kernel void @used_40_vgprs() #10 {
  call void asm sideeffect "", "~{v39}" ()
  ret void
}
define amdgpu_kernel void @used_44_vgprs() #10 {
  call void asm sideeffect "", "~{v43}" ()
  ret void
}
define amdgpu_kernel void @used_48_vgprs() #10 {
  call void asm sideeffect "", "~{v47}" ()
  ret void
}
define amdgpu_kernel void @used_56_vgprs() #10 {
  call void asm sideeffect "", "~{v55}" ()
  ret void
}
define amdgpu_kernel void @used_64_vgprs() #10 {
  call void asm sideeffect "", "~{v63}" ()
  ret void
}
define amdgpu_kernel void @used_72_vgprs() #10 {
  call void asm sideeffect "", "~{v71}" ()
  ret void
}
define amdgpu_kernel void @used_80_vgprs() #10 {
  call void asm sideeffect "", "~{v79}" ()
  ret void
}
define amdgpu_kernel void @used_84_vgprs() #10 {
  call void asm sideeffect "", "~{v83}" ()
  ret void
}
define amdgpu_kernel void @used_88_vgprs() #10 {
  call void asm sideeffect "", "~{v87}" ()
  ret void
}
define amdgpu_kernel void @used_96_vgprs() #10 {
  call void asm sideeffect "", "~{v95}" ()
  ret void
}
define amdgpu_kernel void @used_100_vgprs() #10 {
  call void asm sideeffect "", "~{v99}" ()
  ret void
}
define amdgpu_kernel void @used_112_vgprs() #10 {
  call void asm sideeffect "", "~{v111}" ()
  ret void
}
define amdgpu_kernel void @used_128_vgprs() #10 {
  call void asm sideeffect "", "~{v127}" ()
  ret void
}
define amdgpu_kernel void @used_144_vgprs() #10 {
  call void asm sideeffect "", "~{v143}" ()
  ret void
}
define amdgpu_kernel void @used_168_vgprs() #10 {
  call void asm sideeffect "", "~{v167}" ()
  ret void
}
define amdgpu_kernel void @used_200_vgprs() #10 {
  call void asm sideeffect "", "~{v199}" ()
  ret void
}
define amdgpu_kernel void @used_256_vgprs() #10 {
  call void asm sideeffect "", "~{v255}" ()
  ret void
}
define amdgpu_kernel void @used_80_sgprs() #10 {
  call void asm sideeffect "", "~{s79}" ()
  ret void
}
define amdgpu_kernel void @used_88_sgprs() #10 {
  call void asm sideeffect "", "~{s87}" ()
  ret void
}
define amdgpu_kernel void @used_100_sgprs() #10 {
  call void asm sideeffect "", "~{s99}" ()
  ret void
}
define amdgpu_kernel void @used_101_sgprs() #10 {
  call void asm sideeffect "", "~{s100}" ()
  ret void
}
@lds6552 = internal addrspace(3) global [6552 x i8] poison, align 4
define amdgpu_kernel void @used_lds_6552()  {
  store volatile i8 1, ptr addrspace(3) @lds6552
  ret void
}
@lds6556 = internal addrspace(3) global [6556 x i8] poison, align 4
define amdgpu_kernel void @used_lds_6556()  {
  store volatile i8 1, ptr addrspace(3) @lds6556
  ret void
}
@lds13112 = internal addrspace(3) global [13112 x i8] poison, align 4
define amdgpu_kernel void @used_lds_13112()  {
  store volatile i8 1, ptr addrspace(3) @lds13112
  ret void
}
@lds8252 = internal addrspace(3) global [8252 x i8] poison, align 4
define amdgpu_kernel void @used_lds_8252_max_group_size_64() #3 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_96() #4 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_128() #5 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_192() #6 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_256() #7 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_512() #8 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_1024() #9 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @used_lds_8252_max_group_size_32() #10 {
  store volatile i8 1, ptr addrspace(3) @lds8252
  ret void
}
define amdgpu_kernel void @kernel_32_agprs() #11 {
  call void asm sideeffect "", "~{v8}" ()
  call void asm sideeffect "", "~{a31}" ()
  ret void
}
define amdgpu_kernel void @kernel_0_agprs() #11 {
  call void asm sideeffect "", "~{v0}" ()
  ret void
}
define amdgpu_kernel void @kernel_40_vgprs() #11 {
  call void asm sideeffect "", "~{v39}" ()
  call void asm sideeffect "", "~{a15}" ()
  ret void
}
define amdgpu_kernel void @kernel_max_gprs() #11 {
  call void asm sideeffect "", "~{v255}" ()
  call void asm sideeffect "", "~{a255}" ()
  ret void
}
attributes #3 = { "amdgpu-flat-work-group-size"="1,64" }
attributes #4 = { "amdgpu-flat-work-group-size"="1,96" }
attributes #5 = { "amdgpu-flat-work-group-size"="1,128" }
attributes #6 = { "amdgpu-flat-work-group-size"="1,192" }
attributes #7 = { "amdgpu-flat-work-group-size"="1,256" }
attributes #8 = { "amdgpu-flat-work-group-size"="1,512" }
attributes #9 = { "amdgpu-flat-work-group-size"="1,1024" }
attributes #10 = { "amdgpu-flat-work-group-size"="1,32" }
attributes #11 = { nounwind noinline "amdgpu-flat-work-group-size"="1,512" }

