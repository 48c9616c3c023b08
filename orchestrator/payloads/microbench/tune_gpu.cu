// The copy kernel of `bandwidth`, as Kernel Tuner's CUDA (cupy) and HIP backends tune it.
//
// Tunable: block_size_x threads per block, VEC floats per access (1, 2, 4: 32 to 128
// bits), UNROLL accesses in flight per thread and loop step, NT (1: streaming loads and
// stores), WPT loop steps per thread (the grid shrinks as WPT grows: WPT 1 is one element
// per thread, larger WPT approaches a persistent kernel).
#if VEC == 4
typedef float4 vec;
#elif VEC == 2
typedef float2 vec;
#else
typedef float vec;
#endif

__device__ __forceinline__ vec load(const vec* p) {
#if NT && defined(__HIPCC__)
    return *p;  // hipcc: the nontemporal builtins need native vectors; see bandwidth_gpu.cu
#elif NT
    return __ldcs(p);
#else
    return *p;
#endif
}

__device__ __forceinline__ void store(vec* p, vec v) {
#if NT && !defined(__HIPCC__)
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void copy_kernel(float* out, const float* in, int n) {
    const vec* src = reinterpret_cast<const vec*>(in);
    vec* dst = reinterpret_cast<vec*>(out);
    const int nv = n / VEC;
    const int stride = gridDim.x * block_size_x;
    int i = blockIdx.x * block_size_x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {
        vec v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = load(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) store(dst + i + u * stride, v[u]);
    }
    for (; i < nv; i += stride) store(dst + i, load(src + i));
}
