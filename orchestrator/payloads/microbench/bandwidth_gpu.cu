// Memory bandwidth of a GPU, from one source for CUDA (nvcc) and HIP (hipcc / clang -x hip).
//
// Two persistent kernels stream float4 (128-bit) elements with an 8x unrolled
// grid-stride loop: `ro` reads an array and accumulates into registers (a dead store
// that never fires keeps the loads alive), `rw` copies one array into another (bytes
// read plus bytes written). The grid is compute units x resident blocks of 1024
// threads, so every block lives for the whole kernel. -DNONTEMPORAL=1 marks loads and
// stores as streaming (non-temporal). Prints one JSON document on stdout.
//
//   bandwidth_gpu [--size BYTES] [--min-ms MS] [--batches N]   (no --size: the sweep)
#include "bandwidth_common.h"

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define GPU(name) hip##name
#define GPU_API "hip"
#define ATTR_CLOCK hipDeviceAttributeClockRate
#define ATTR_MEM_CLOCK hipDeviceAttributeMemoryClockRate
#define ATTR_BUS hipDeviceAttributeMemoryBusWidth
#define DEVICE_PROP hipDeviceProp_t
#else
#include <cuda_runtime.h>
#define GPU(name) cuda##name
#define GPU_API "cuda"
#define ATTR_CLOCK cudaDevAttrClockRate
#define ATTR_MEM_CLOCK cudaDevAttrMemoryClockRate
#define ATTR_BUS cudaDevAttrGlobalMemoryBusWidth
#define DEVICE_PROP cudaDeviceProp
#endif

#ifndef NONTEMPORAL
#define NONTEMPORAL 0
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#define BLOCK 1024

#define CHECK(call)                                                                     \
    do {                                                                                \
        GPU(Error_t) err_ = (call);                                                     \
        if (err_ != GPU(Success)) {                                                     \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                         GPU(GetErrorString)(err_));                                    \
            std::exit(2);                                                               \
        }                                                                               \
    } while (0)

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
typedef float native4 __attribute__((ext_vector_type(4)));  // what the builtins take
#endif

__device__ __forceinline__ float4 load(const float4* p) {
#if NONTEMPORAL && (defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__))
    native4 v = __builtin_nontemporal_load(reinterpret_cast<const native4*>(p));
    return make_float4(v.x, v.y, v.z, v.w);
#elif NONTEMPORAL
    return __ldcs(p);
#else
    return *p;
#endif
}

__device__ __forceinline__ void store(float4* p, float4 v) {
#if NONTEMPORAL && (defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__))
    __builtin_nontemporal_store(native4{v.x, v.y, v.z, v.w}, reinterpret_cast<native4*>(p));
#elif NONTEMPORAL
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK) read_only(const float4* in, size_t n, float* sink) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    float4 acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float4 v = load(in + i + u * stride);
            acc[u].x += v.x; acc[u].y += v.y; acc[u].z += v.z; acc[u].w += v.w;
        }
    }
    for (; i < n; i += stride) {
        float4 v = load(in + i);
        acc[0].x += v.x; acc[0].y += v.y; acc[0].z += v.z; acc[0].w += v.w;
    }
    float total = 0.f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) total += acc[u].x + acc[u].y + acc[u].z + acc[u].w;
    if (total == -1.f) *sink = total;  // never true for our data: keeps the loads alive
}

extern "C" __global__ void __launch_bounds__(BLOCK) copy(const float4* in, float4* out, size_t n) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = load(in + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) store(out + i + u * stride, v[u]);
    }
    for (; i < n; i += stride) store(out + i, load(in + i));
}

__global__ void fill(float4* a, size_t n) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        a[i] = make_float4(1.f, 1.f, 1.f, 1.f);
}

// Launches of one kernel, timed with events on the default stream.
template <typename Launch>
static Timing time_kernel(Launch launch, const Options& o) {
    GPU(Event_t) start, stop;
    CHECK(GPU(EventCreate)(&start));
    CHECK(GPU(EventCreate)(&stop));
    auto batch = [&](int launches) {
        CHECK(GPU(EventRecord)(start));
        for (int k = 0; k < launches; ++k) launch();
        CHECK(GPU(EventRecord)(stop));
        CHECK(GPU(EventSynchronize)(stop));
        float ms = 0.f;
        CHECK(GPU(EventElapsedTime)(&ms, start, stop));
        return double(ms);
    };
    launch();  // warm-up
    CHECK(GPU(DeviceSynchronize)());
    Timing t = time_batches(batch, o);
    CHECK(GPU(EventDestroy)(start));
    CHECK(GPU(EventDestroy)(stop));
    return t;
}

int main(int argc, char** argv) {
    Options o{0, 20.0, 7};
    if (!parse_options(argc, argv, o)) return 1;
    int device = 0;
    CHECK(GPU(GetDevice)(&device));
    DEVICE_PROP prop;
    CHECK(GPU(GetDeviceProperties)(&prop, device));
    int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
    (void)GPU(DeviceGetAttribute)(&clock_khz, ATTR_CLOCK, device);  // 0 where unknown
    (void)GPU(DeviceGetAttribute)(&mem_clock_khz, ATTR_MEM_CLOCK, device);
    (void)GPU(DeviceGetAttribute)(&bus_bits, ATTR_BUS, device);
    int per_cu_ro = 0, per_cu_rw = 0;
    CHECK(GPU(OccupancyMaxActiveBlocksPerMultiprocessor)(&per_cu_ro, read_only, BLOCK, 0));
    CHECK(GPU(OccupancyMaxActiveBlocksPerMultiprocessor)(&per_cu_rw, copy, BLOCK, 0));
    const int cus = prop.multiProcessorCount;
    const int grid_ro = cus * std::max(per_cu_ro, 1), grid_rw = cus * std::max(per_cu_rw, 1);

    const std::vector<size_t> sizes = sweep_sizes(o.only, 1700000000, 16);
    const size_t biggest = *std::max_element(sizes.begin(), sizes.end());
    float4 *a = nullptr, *b = nullptr;
    float* sink = nullptr;
    CHECK(GPU(Malloc)(&a, biggest));
    CHECK(GPU(Malloc)(&b, biggest));
    CHECK(GPU(Malloc)(&sink, sizeof(float)));
    fill<<<cus * 4, 256>>>(a, biggest / 16);
    fill<<<cus * 4, 256>>>(b, biggest / 16);
    CHECK(GPU(DeviceSynchronize)());

    const Device d{prop.name, cus, clock_khz / 1000, mem_clock_khz / 1000, bus_bits, size_t(prop.totalGlobalMem)};
    print_header(GPU_API, d, Config{NONTEMPORAL != 0, UNROLL, 16, BLOCK, grid_ro, grid_rw}, o);
    for (size_t k = 0; k < sizes.size(); ++k) {
        const size_t bytes = sizes[k], n = bytes / 16;
        Timing ro = time_kernel([&] { read_only<<<grid_ro, BLOCK>>>(a, n, sink); }, o);
        Timing rw = time_kernel([&] { copy<<<grid_rw, BLOCK>>>(a, b, n); }, o);
        CHECK(GPU(GetLastError)());
        print_row(k == 0, bytes, ro, rw);
    }
    print_end();
    CHECK(GPU(Free)(a));
    CHECK(GPU(Free)(b));
    CHECK(GPU(Free)(sink));
    return 0;
}
