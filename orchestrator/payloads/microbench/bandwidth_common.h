// What bandwidth_gpu.cu and bandwidth_cpu.cpp share (host code only): the options, the
// size sweep, the batch timing rule and the JSON document both print.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct Options {
    size_t only = 0;  // bytes per array; 0: the sweep
    double min_ms;    // a timed batch lasts at least this long
    int batches;
};

// `--size BYTES`, `--min-ms MS`, `--batches N`; false (after a message) on anything else.
static bool parse_options(int argc, char** argv, Options& o) {
    for (int a = 1; a < argc; a += 2) {
        if (a + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", argv[a]); return false; }
        if (!std::strcmp(argv[a], "--size")) o.only = std::strtoull(argv[a + 1], nullptr, 10);
        else if (!std::strcmp(argv[a], "--min-ms")) o.min_ms = std::atof(argv[a + 1]);
        else if (!std::strcmp(argv[a], "--batches")) o.batches = std::atoi(argv[a + 1]);
        else { std::fprintf(stderr, "unknown option %s\n", argv[a]); return false; }
    }
    return o.min_ms > 0 && o.batches > 0;
}

// 76 KiB, doubling, up to min(cap, 1.5 GiB), then `cap` itself; or the one size asked for.
// Every size is rounded down to a multiple of `align` bytes.
static std::vector<size_t> sweep_sizes(size_t only, size_t cap, size_t align) {
    std::vector<size_t> sizes;
    if (only) sizes.push_back(only);
    else {
        const size_t top = std::min(cap, (size_t(1) << 30) + (size_t(1) << 29));
        for (size_t s = 76 * 1024; s <= top; s *= 2) sizes.push_back(s);
        if (sizes.empty() || sizes.back() < cap) sizes.push_back(cap);
    }
    for (size_t& s : sizes) s = std::max(align, s / align * align);
    return sizes;
}

struct Timing { double median_ms, best_ms; int launches; };

// `batch(launches)` runs the kernel that many times and returns the elapsed ms. Launches
// per batch grow until a batch lasts min_ms; then the median and best of `batches`
// batches, per launch. The caller has warmed the kernel up.
template <typename Batch>
static Timing time_batches(Batch batch, const Options& o) {
    int launches = 1;
    for (double ms = batch(1); ms < o.min_ms && launches < (1 << 20);) {
        const double grow = std::max(2.0, 1.2 * o.min_ms / std::max(ms, 1e-3));
        launches = int(std::min<double>(launches * grow, 1 << 20));
        ms = batch(launches);
    }
    std::vector<double> per;
    for (int b = 0; b < o.batches; ++b) per.push_back(batch(launches) / launches);
    std::sort(per.begin(), per.end());
    return {per[per.size() / 2], per.front(), launches};
}

struct Device { const char* name; int compute_units, clock_mhz, memory_clock_mhz, memory_bus_bits; size_t memory_bytes; };
struct Config { bool nontemporal; int unroll, vector_bytes, block, grid_ro, grid_rw; };

static void print_header(const char* api, const Device& d, const Config& c, const Options& o) {
    std::printf("{\"schema\": 1, \"program\": \"bandwidth\", \"api\": \"%s\",\n", api);
    std::printf(" \"device\": {\"name\": \"%s\", \"compute_units\": %d, \"clock_mhz\": %d, "
                "\"memory_clock_mhz\": %d, \"memory_bus_bits\": %d, \"memory_bytes\": %zu},\n",
                d.name, d.compute_units, d.clock_mhz, d.memory_clock_mhz, d.memory_bus_bits, d.memory_bytes);
    std::printf(" \"config\": {\"nontemporal\": %s, \"unroll\": %d, \"vector_bytes\": %d, \"block\": %d, "
                "\"grid_ro\": %d, \"grid_rw\": %d, \"min_ms\": %g, \"batches\": %d},\n",
                c.nontemporal ? "true" : "false", c.unroll, c.vector_bytes, c.block, c.grid_ro, c.grid_rw,
                o.min_ms, o.batches);
    std::printf(" \"rows\": [");
}

// One size: GB/s from the median (and best) batch; the copy counts bytes read and written.
static void print_row(bool first, size_t bytes, const Timing& ro, const Timing& rw) {
    std::printf("%s\n  {\"bytes\": %zu, \"ro_ms\": %.6g, \"rw_ms\": %.6g, \"ro_gbs\": %.6g, \"rw_gbs\": %.6g, "
                "\"ro_gbs_best\": %.6g, \"rw_gbs_best\": %.6g, \"launches\": [%d, %d]}",
                first ? "" : ",", bytes, ro.median_ms, rw.median_ms, bytes / ro.median_ms / 1e6,
                2.0 * bytes / rw.median_ms / 1e6, bytes / ro.best_ms / 1e6, 2.0 * bytes / rw.best_ms / 1e6,
                ro.launches, rw.launches);
    std::fflush(stdout);
}

static void print_end() { std::printf("\n ]}\n"); }
