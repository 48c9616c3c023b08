// saxpy with a typo: `alpha` is not declared.
#include "gmxbench_kernel.h"

extern "C" void saxpy(size_t n, float a, const float* x, float* y) {
    for (size_t i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
}

int main(int argc, char** argv) {
    gmxbench::Bench bench(argc, argv);
    return bench.done();
}
