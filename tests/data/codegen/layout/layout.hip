// Two kernels read a device table; VARIANT=1 adds a large kernel after them, which moves the
// table and the called function relative to the unchanged kernels' code.
#include <hip/hip_runtime.h>
__device__ float table[64] = {1, 2, 3, 4, 5, 6, 7, 8};
__device__ __noinline__ float lookup(int i) { return table[i & 63] * 2.0f; }
__global__ void scaleKernel(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = table[i & 63] * out[i];
}
__global__ void callKernel(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lookup(i) + out[i];
}
#if VARIANT
__global__ void extraKernel(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float s = 0; _Pragma("unroll") for (int k = 0; k < 1500; ++k) s += table[(i + k) & 63] * k; out[i] = s; }
}
#endif
