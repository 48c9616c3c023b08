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

#include <cstdint>
#include <fstream>
#include <string>

#include "bandwidth_common.h"

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

template <typename Launch>
static Timing time_kernel(Launch launch, const Options& o) {
    auto batch = [&](int launches) {
        double t0 = omp_get_wtime();
        for (int k = 0; k < launches; ++k) launch();
        return (omp_get_wtime() - t0) * 1e3;
    };
    launch();  // warm-up
    return time_batches(batch, o);
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
    Options o{0, 50.0, 5};
    if (!parse_options(argc, argv, o)) return 1;
    const size_t cap = std::min<size_t>(1700000000, mem_available() / 4);
    const std::vector<size_t> sizes = sweep_sizes(o.only, cap, VEC * UNROLL * 4);
    const size_t biggest = *std::max_element(sizes.begin(), sizes.end());
    if (2 * biggest > mem_available()) {
        std::fprintf(stderr, "--size %zu needs %zu bytes; %zu are available\n", biggest, 2 * biggest, mem_available());
        return 1;
    }
    float* a = static_cast<float*>(std::aligned_alloc(64, biggest));
    float* b = static_cast<float*>(std::aligned_alloc(64, biggest));
    if (!a || !b) { std::fprintf(stderr, "cannot allocate 2 x %zu bytes\n", biggest); return 1; }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < biggest / 4; ++i) a[i] = b[i] = 1.f;  // first touch by the threads that use it

    const std::string name = cpuinfo("model name");
    const int threads = omp_get_max_threads();
    const Device d{name.c_str(), threads, std::atoi(cpuinfo("cpu MHz").c_str()), 0, 0, mem_available()};
    print_header("openmp", d, Config{NONTEMPORAL != 0, UNROLL, VEC * 4, 0, threads, threads}, o);
    for (size_t k = 0; k < sizes.size(); ++k) {
        const size_t bytes = sizes[k], n = bytes / 4;
        Timing ro = time_kernel([&] { read_only(a, n); }, o);
        Timing rw = time_kernel([&] { copy(a, b, n); }, o);
        print_row(k == 0, bytes, ro, rw);
    }
    print_end();
    std::free(a);
    std::free(b);
    return 0;
}
