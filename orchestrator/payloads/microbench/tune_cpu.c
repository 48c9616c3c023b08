/* The copy kernel of `bandwidth`, as Kernel Tuner's C backend tunes it on the CPU.
 *
 * Tunable (macros Kernel Tuner defines per configuration): VEC floats per vector
 * (4: 128-bit, 8: 256-bit), UNROLL vectors per loop step, NT (1: streaming stores that
 * bypass the caches), CHUNK loop steps per OpenMP schedule chunk (the work a thread
 * takes at a time). Returns its own wall time in ms, as the C backend expects. */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>

/* Loads may be unaligned (aligned(4)); stores start at an aligned address of `out`. */
typedef float vec __attribute__((vector_size(VEC * 4), aligned(4)));

static inline void put(float *p, vec v) {
#if NT && VEC == 8
    _mm256_stream_ps(p, (__m256)v);
#elif NT && VEC == 4
    _mm_stream_ps(p, (__m128)v);
#else
    *(vec *)p = v;  /* aligned(4): an unaligned store where NT is off */
#endif
}

float copy_kernel(float *out, const float *in, int n) {
    const long step = (long)VEC * UNROLL;
    long head = (long)((VEC * 4 - ((uintptr_t)out % (VEC * 4))) % (VEC * 4)) / 4;
    if (head > n) head = n;
    const long steps = (n - head) / step;
    double start = omp_get_wtime();
    for (long i = 0; i < head; ++i) out[i] = in[i];
#pragma omp parallel for schedule(static, CHUNK)
    for (long s = 0; s < steps; ++s) {
        const float *src = in + head + s * step;
        float *dst = out + head + s * step;
        vec v[UNROLL];
        for (int u = 0; u < UNROLL; ++u) v[u] = *(const vec *)(src + u * VEC);
        for (int u = 0; u < UNROLL; ++u) put(dst + u * VEC, v[u]);
    }
    for (long i = head + steps * step; i < n; ++i) out[i] = in[i];
#if NT
    _mm_sfence();
#endif
    return (float)((omp_get_wtime() - start) * 1e3);
}
