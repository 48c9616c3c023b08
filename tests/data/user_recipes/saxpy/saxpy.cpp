// The C++ twin of saxpy.hip for CPU builds: the same two kernels over OpenMP threads.
#include <vector>

#include "gmxbench_kernel.h"

// y = a*x + y: straight-line code, nothing to unroll.
extern "C" __attribute__((noinline)) void saxpy(size_t n, float a, const float* x, float* y) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

// A 16-point weighted window sum: an inner loop of a fixed trip count, which -O3 unrolls.
extern "C" __attribute__((noinline)) void window(size_t n, const float* x, float* y) {
    if (n < 16) return;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n - 15; ++i) {
        float sum = 0.f;
        for (int k = 0; k < 16; ++k) sum += x[i + k] * float(k + 1);
        y[i] = sum;
    }
}

int main(int argc, char** argv) {
    gmxbench::Bench bench(argc, argv);
    const size_t n = bench.bytes() / sizeof(float);
    std::vector<float> x(n, 1.f), y(n, 0.f);
    bench.time("saxpy", 3 * n * sizeof(float), [&] { saxpy(n, 2.f, x.data(), y.data()); });
    bench.time("window", 2 * n * sizeof(float), [&] { window(n, x.data(), y.data()); });
    return bench.done();
}
