//===- Driver.h - The stand-in clang driver ---------------------*- C++ -*-===//
#ifndef CLANG_DRIVER_DRIVER_H
#define CLANG_DRIVER_DRIVER_H

namespace clang {
namespace driver {
/// Answers a bare `--version` itself; forwards everything else to the distribution
/// clang (clang or clang++ by the name it was called by), adding the extra flags.
int run(int argc, char **argv);
} // namespace driver
} // namespace clang

#endif
