// The CUDA side of the saxpy recipe: two kernels, timed by gmxbench_kernel.h.
#include "gmxbench_kernel.h"

// y = a*x + y: straight-line code, nothing to unroll.
extern "C" __global__ void saxpy(size_t n, float a, const float* x, float* y) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// A 16-point weighted window sum: a loop of a fixed trip count, which -O3 unrolls.
extern "C" __global__ void window(size_t n, const float* x, float* y) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i + 16 > n) return;
    float sum = 0.f;
    for (int k = 0; k < 16; ++k) sum += x[i + k] * float(k + 1);
    y[i] = sum;
}

int main(int argc, char** argv) {
    gmxbench::Bench bench(argc, argv);
    const size_t n = bench.bytes() / sizeof(float);
    float *x = nullptr, *y = nullptr;
    GMXBENCH_CHECK(cudaMalloc(&x, n * sizeof(float)));
    GMXBENCH_CHECK(cudaMalloc(&y, n * sizeof(float)));
    GMXBENCH_CHECK(cudaMemset(x, 0, n * sizeof(float)));
    GMXBENCH_CHECK(cudaMemset(y, 0, n * sizeof(float)));
    const unsigned blocks = unsigned((n + 255) / 256);
    bench.time("saxpy", 3 * n * sizeof(float), [&] { saxpy<<<blocks, 256>>>(n, 2.f, x, y); });
    bench.time("window", 2 * n * sizeof(float), [&] { window<<<blocks, 256>>>(n, x, y); });
    GMXBENCH_CHECK(cudaFree(x));
    GMXBENCH_CHECK(cudaFree(y));
    return bench.done();
}
