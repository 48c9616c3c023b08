// A one-kernel HIP source for the code-object-version fixtures (see ../README.md).
#include <hip/hip_runtime.h>

__global__ void scaleKernel(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        x[i] *= a;
    }
}
