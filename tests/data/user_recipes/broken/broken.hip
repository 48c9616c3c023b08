// saxpy with a typo: `alpha` is not declared.
#include "gmxbench_kernel.h"

extern "C" __global__ void saxpy(size_t n, float a, const float* x, float* y) {
    const size_t i = threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}

int main(int argc, char** argv) {
    gmxbench::Bench bench(argc, argv);
    return bench.done();
}
