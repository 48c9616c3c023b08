// gmxbench_kernel.h: times your own kernels the way gmxbench times bandwidth.
//
// A kernel recipe with its own sources ([sources] hip/cuda/cpu, docs/recipes.md "Your own
// kernel") is compiled by a build's own compiler and flags against this header. Write the
// kernels and a small main:
//
//   #include "gmxbench_kernel.h"
//   __global__ void saxpy(size_t n, float a, const float* x, float* y) { ... }
//   int main(int argc, char** argv) {
//       gmxbench::Bench bench(argc, argv);      // the options the runner passes
//       const size_t n = bench.bytes() / sizeof(float);
//       ... allocate and fill x, y (GMXBENCH_CHECK(hipMalloc(...)) on a GPU) ...
//       bench.time("saxpy", 3 * n * sizeof(float), [&] { saxpy<<<blocks, 256>>>(n, 2.f, x, y); });
//       return bench.done();                    // prints the JSON document on stdout
//   }
//
// `time(name, bytes, launch)` warms the kernel up with one launch, then grows the number of
// launches per batch until a batch lasts --min-ms, and takes the median and the best of
// --batches batches per launch (bandwidth_common.h's time_batches, the same rule as
// bandwidth). GPU batches are timed with HIP/CUDA events on the default stream, CPU ones
// with std::chrono. A kernel reports `<name>_ms` (median ms per launch) and, when `bytes`
// (moved per launch) is not 0, `<name>_gbs` (GB/s); the recipe declares those it judges.
//
// Options: --size BYTES (the recipe's size), --min-ms MS, --batches N, --variant NAME
// (`bench.variant()`: the recipe's variant, for the program to act on).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define GMXBENCH_GPU(name) hip##name
#define GMXBENCH_DEVICE_PROP hipDeviceProp_t
#define GMXBENCH_API "hip"
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#define GMXBENCH_GPU(name) cuda##name
#define GMXBENCH_DEVICE_PROP cudaDeviceProp
#define GMXBENCH_API "cuda"
#else
#define GMXBENCH_API "openmp"
#endif

// bandwidth's options and batch rule, kept out of the user's global namespace (the
// standard headers it includes are included above, so their guards skip them here).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
namespace gmxbench::detail {
#include "bandwidth_common.h"
}  // namespace gmxbench::detail
#pragma GCC diagnostic pop

#ifdef GMXBENCH_GPU
// Exits with the runtime's message when a HIP/CUDA call fails.
#define GMXBENCH_CHECK(call)                                                            \
    do {                                                                                \
        GMXBENCH_GPU(Error_t) err_ = (call);                                            \
        if (err_ != GMXBENCH_GPU(Success)) {                                            \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                         GMXBENCH_GPU(GetErrorString)(err_));                           \
            std::exit(2);                                                               \
        }                                                                               \
    } while (0)
#endif

namespace gmxbench {

using detail::Options;
using detail::Timing;

struct Result { std::string name; size_t bytes; Timing t; };

class Bench {
public:
    // Reads the options; exits with code 1 (after a message) on a bad one.
    Bench(int argc, char** argv) : o_{size_t(64) << 20, GPU ? 20.0 : 50.0, GPU ? 7 : 5} {
        std::vector<char*> rest{argv[0]};
        for (int a = 1; a < argc; ++a) {
            if (!std::strcmp(argv[a], "--variant") && a + 1 < argc) variant_ = argv[++a];
            else rest.push_back(argv[a]);
        }
        if (!detail::parse_options(int(rest.size()), rest.data(), o_) || o_.only == 0) {
            std::fprintf(stderr, "usage: %s [--size BYTES] [--min-ms MS] [--batches N] [--variant NAME]\n", argv[0]);
            std::exit(1);
        }
    }

    size_t bytes() const { return o_.only; }
    const std::string& variant() const { return variant_; }

    // Times `launch` (one launch of the kernel, asynchronous on a GPU): metric names are
    // `<name>_ms` and `<name>_gbs`, so `name` is lower case letters, digits and `_`.
    template <typename Launch>
    void time(const char* name, size_t bytes, Launch launch) {
        for (const char* c = name; *c; ++c)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9' && c != name) || *c == '_')) {
                std::fprintf(stderr, "kernel name '%s': use lower case letters, digits and _\n", name);
                std::exit(1);
            }
        results_.push_back({name, bytes, measure(launch)});
    }

    // Prints the JSON document; main returns its value.
    int done() const {
        std::printf("{\"schema\": 1, \"program\": \"kernel\", \"api\": \"%s\",\n", GMXBENCH_API);
        std::printf(" \"device\": {\"name\": \"%s\", \"compute_units\": %d},\n", device_name().c_str(), compute_units());
        std::printf(" \"config\": {\"bytes\": %zu, \"min_ms\": %g, \"batches\": %d, \"variant\": \"%s\"},\n",
                    o_.only, o_.min_ms, o_.batches, clean(variant_).c_str());
        std::printf(" \"kernels\": [");
        for (size_t k = 0; k < results_.size(); ++k) {
            const Result& r = results_[k];
            std::printf("%s\n  {\"name\": \"%s\", \"ms\": %.6g, \"ms_best\": %.6g, \"launches\": %d, \"bytes\": %zu",
                        k ? "," : "", r.name.c_str(), r.t.median_ms, r.t.best_ms, r.t.launches, r.bytes);
            if (r.bytes) std::printf(", \"gbs\": %.6g, \"gbs_best\": %.6g", r.bytes / r.t.median_ms / 1e6, r.bytes / r.t.best_ms / 1e6);
            std::printf("}");
        }
        std::printf("\n ]}\n");
        return std::fflush(stdout) == 0 ? 0 : 3;
    }

private:
#ifdef GMXBENCH_GPU
    static constexpr bool GPU = true;
    template <typename Launch>
    Timing measure(Launch launch) const {
        GMXBENCH_GPU(Event_t) start, stop;
        GMXBENCH_CHECK(GMXBENCH_GPU(EventCreate)(&start));
        GMXBENCH_CHECK(GMXBENCH_GPU(EventCreate)(&stop));
        auto batch = [&](int launches) {
            GMXBENCH_CHECK(GMXBENCH_GPU(EventRecord)(start));
            for (int k = 0; k < launches; ++k) launch();
            GMXBENCH_CHECK(GMXBENCH_GPU(EventRecord)(stop));
            GMXBENCH_CHECK(GMXBENCH_GPU(EventSynchronize)(stop));
            float ms = 0.f;
            GMXBENCH_CHECK(GMXBENCH_GPU(EventElapsedTime)(&ms, start, stop));
            return double(ms);
        };
        launch();  // warm-up
        GMXBENCH_CHECK(GMXBENCH_GPU(GetLastError)());
        GMXBENCH_CHECK(GMXBENCH_GPU(DeviceSynchronize)());
        Timing t = detail::time_batches(batch, o_);
        GMXBENCH_CHECK(GMXBENCH_GPU(GetLastError)());
        GMXBENCH_CHECK(GMXBENCH_GPU(EventDestroy)(start));
        GMXBENCH_CHECK(GMXBENCH_GPU(EventDestroy)(stop));
        return t;
    }
    static std::string device_name() {
        GMXBENCH_DEVICE_PROP prop;
        int device = 0;
        GMXBENCH_CHECK(GMXBENCH_GPU(GetDevice)(&device));
        GMXBENCH_CHECK(GMXBENCH_GPU(GetDeviceProperties)(&prop, device));
        return clean(prop.name);
    }
    static int compute_units() {
        GMXBENCH_DEVICE_PROP prop;
        int device = 0;
        GMXBENCH_CHECK(GMXBENCH_GPU(GetDevice)(&device));
        GMXBENCH_CHECK(GMXBENCH_GPU(GetDeviceProperties)(&prop, device));
        return prop.multiProcessorCount;
    }
#else
    static constexpr bool GPU = false;
    template <typename Launch>
    Timing measure(Launch launch) const {
        auto batch = [&](int launches) {
            const auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < launches; ++k) launch();
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        };
        launch();  // warm-up
        return detail::time_batches(batch, o_);
    }
    static std::string device_name() {
        std::ifstream f("/proc/cpuinfo");
        std::string line;
        while (std::getline(f, line))
            if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
                return clean(line.substr(line.find(':') + 2));
        return "cpu";
    }
    static int compute_units() { return int(std::thread::hardware_concurrency()); }
#endif

    // A string as a JSON string's contents: quotes, backslashes and controls dropped.
    static std::string clean(const std::string& s) {
        std::string out;
        for (char c : s) if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) out += c;
        return out;
    }

    Options o_;
    std::string variant_ = "default";
    std::vector<Result> results_;
};

}  // namespace gmxbench
