//===- ExtraFlags.h - What this compiler adds to a compilation --*- C++ -*-===//
//
// The stand-in for a backend change: flags the driver adds to compilations. Each entry
// is one argument. Host flags go to host compilations (as -Xarch_host <flag> in a
// HIP/CUDA compilation), device flags to the device side only (-Xarch_device <flag>).
//
//===----------------------------------------------------------------------===//
#ifndef CLANG_DRIVER_EXTRAFLAGS_H
#define CLANG_DRIVER_EXTRAFLAGS_H

#include <string>
#include <vector>

namespace clang {
namespace driver {
const std::vector<std::string> &extraHostFlags();
const std::vector<std::string> &extraDeviceFlags();
} // namespace driver
} // namespace clang

#endif
