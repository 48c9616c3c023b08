// Memory bandwidth of the host, the CPU twin of bandwidth_gpu.cu, compiled with the
// build's own C++ compiler so that x86 backend changes show in it.
//
// The same two kernels over OpenMP threads: `ro` reads an array into UNROLL vector
// accumulators (a dead store that never fires keeps the loads alive), `rw` copies one
// array into another (bytes read plus bytes written). Vectors are VEC floats wide
// (default: 8 with AVX, else 4); -DNONTEMPORAL=1 makes the copy's stores streaming
// (x86 only). Prints one JSON document on stdout, in bandwidth_gpu.cu's format.
//
//   bandwidth_cpu [--size BYTES] [--min-ms MS] [--batches N]   (no --size: the sweep)
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifndef NONTEMPORAL
#define NONTEMPORAL 0
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef VEC
#if defined(__AVX__)
#define VEC 8
#else
#define VEC 4
#endif
#endif

typedef float vec __attribute__((vector_size(VEC * 4)));
static float sink;

static inline void put(float* p, vec v) {
#if NONTEMPORAL && defined(__x86_64__) && VEC == 8 && defined(__AVX__)
    _mm256_stream_ps(p, (__m256)v);
#elif NONTEMPORAL && defined(__x86_64__) && VEC == 4
    _mm_stream_ps(p, (__m128)v);
#else
    *(vec*)p = v;
#endif
}

// Each thread takes one contiguous part (static schedule), so a part stays in the
// caches of the core that touched it first.
static void read_only(const float* in, size_t n) {
    const size_t steps = n / (VEC * UNROLL);
    float total = 0.f;
#pragma omp parallel reduction(+ : total)
    {
        vec acc[UNROLL] = {};
#pragma omp for schedule(static)
        for (size_t s = 0; s < steps; ++s) {
            const float* p = in + s * VEC * UNROLL;
            for (int u = 0; u < UNROLL; ++u) acc[u] += *(const vec*)(p + u * VEC);
        }
        for (int u = 0; u < UNROLL; ++u)
            for (int k = 0; k < VEC; ++k) total += acc[u][k];
    }
    if (total == -1.f) sink = total;  // never true for our data: keeps the loads alive
}

static void copy(const float* in, float* out, size_t n) {
    const size_t steps = n / (VEC * UNROLL);
#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < steps; ++s) {
        const float* p = in + s * VEC * UNROLL;
        float* q = out + s * VEC * UNROLL;
        vec v[UNROLL];
        for (int u = 0; u < UNROLL; ++u) v[u] = *(const vec*)(p + u * VEC);
        for (int u = 0; u < UNROLL; ++u) put(q + u * VEC, v[u]);
    }
#if NONTEMPORAL && defined(__x86_64__)
    _mm_sfence();
#endif
}

struct Timing { double median_ms, best_ms; int launches; };

template <typename Launch>
static Timing time_kernel(Launch launch, double min_ms, int batches) {
    auto batch = [&](int launches) {
        double t0 = omp_get_wtime();
        for (int k = 0; k < launches; ++k) launch();
        return (omp_get_wtime() - t0) * 1e3;
    };
    launch();  // warm-up
    int launches = 1;
    for (double ms = batch(1); ms < min_ms && launches < (1 << 20);) {
        launches = int(std::min<double>(launches * std::max(2.0, 1.2 * min_ms / std::max(ms, 1e-3)), 1 << 20));
        ms = batch(launches);
    }
    std::vector<double> per;
    for (int b = 0; b < batches; ++b) per.push_back(batch(launches) / launches);
    std::sort(per.begin(), per.end());
    return {per[per.size() / 2], per.front(), launches};
}

static std::string cpuinfo(const char* key) {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key, 0) == 0 && line.find(':') != std::string::npos) {
            std::string v = line.substr(line.find(':') + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            std::string out;
            for (char c : v) if (c != '"' && c != '\\') out += c;
            return out;
        }
    return "";
}

static size_t mem_available() {
    std::ifstream f("/proc/meminfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
    return size_t(4) << 30;
}

int main(int argc, char** argv) {
    size_t only = 0;
    double min_ms = 50.0;
    int batches = 5;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!std::strcmp(argv[a], "--size")) only = std::strtoull(argv[a + 1], nullptr, 10);
        else if (!std::strcmp(argv[a], "--min-ms")) min_ms = std::atof(argv[a + 1]);
        else if (!std::strcmp(argv[a], "--batches")) batches = std::atoi(argv[a + 1]);
        else { std::fprintf(stderr, "unknown option %s\n", argv[a]); return 1; }
    }
    const size_t cap = std::min<size_t>(1700000000, mem_available() / 4);
    std::vector<size_t> sizes;
    if (only) sizes.push_back(only);
    else {
        for (size_t s = 76 * 1024; s <= std::min(cap, (size_t(1) << 30) + (size_t(1) << 29)); s *= 2) sizes.push_back(s);
        if (sizes.empty() || sizes.back() < cap) sizes.push_back(cap);
    }
    const size_t align = VEC * UNROLL * 4;
    size_t biggest = 0;
    for (size_t& s : sizes) { s = std::max(align, s / align * align); biggest = std::max(biggest, s); }
    if (2 * biggest > mem_available()) {
        std::fprintf(stderr, "--size %zu needs %zu bytes; %zu are available\n", biggest, 2 * biggest, mem_available());
        return 1;
    }
    float* a = static_cast<float*>(std::aligned_alloc(64, biggest));
    float* b = static_cast<float*>(std::aligned_alloc(64, biggest));
    if (!a || !b) { std::fprintf(stderr, "cannot allocate 2 x %zu bytes\n", biggest); return 1; }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < biggest / 4; ++i) a[i] = b[i] = 1.f;  // first touch by the threads that use it

    std::printf("{\"schema\": 1, \"program\": \"bandwidth\", \"api\": \"openmp\",\n");
    std::printf(" \"device\": {\"name\": \"%s\", \"compute_units\": %d, \"clock_mhz\": %d, "
                "\"memory_clock_mhz\": 0, \"memory_bus_bits\": 0, \"memory_bytes\": %zu},\n",
                cpuinfo("model name").c_str(), omp_get_max_threads(), std::atoi(cpuinfo("cpu MHz").c_str()),
                mem_available());
    std::printf(" \"config\": {\"nontemporal\": %s, \"unroll\": %d, \"vector_bytes\": %d, \"block\": 0, "
                "\"grid_ro\": %d, \"grid_rw\": %d, \"min_ms\": %g, \"batches\": %d},\n",
                NONTEMPORAL ? "true" : "false", UNROLL, VEC * 4, omp_get_max_threads(), omp_get_max_threads(),
                min_ms, batches);
    std::printf(" \"rows\": [");
    for (size_t k = 0; k < sizes.size(); ++k) {
        const size_t bytes = sizes[k], n = bytes / 4;
        Timing ro = time_kernel([&] { read_only(a, n); }, min_ms, batches);
        Timing rw = time_kernel([&] { copy(a, b, n); }, min_ms, batches);
        std::printf("%s\n  {\"bytes\": %zu, \"ro_ms\": %.6g, \"rw_ms\": %.6g, \"ro_gbs\": %.6g, \"rw_gbs\": %.6g, "
                    "\"ro_gbs_best\": %.6g, \"rw_gbs_best\": %.6g, \"launches\": [%d, %d]}",
                    k ? "," : "", bytes, ro.median_ms, rw.median_ms, bytes / ro.median_ms / 1e6,
                    2.0 * bytes / rw.median_ms / 1e6, bytes / ro.best_ms / 1e6, 2.0 * bytes / rw.best_ms / 1e6,
                    ro.launches, rw.launches);
        std::fflush(stdout);
    }
    std::printf("\n ]}\n");
    std::free(a);
    std::free(b);
    return 0;
}
