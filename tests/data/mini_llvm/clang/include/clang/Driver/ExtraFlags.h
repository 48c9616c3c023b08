//===- ExtraFlags.h - What this compiler adds to a compilation --*- C++ -*-===//
//
// The stand-in for a backend change: flags the driver adds to compilations. Each entry
// is one argument. Host flags go to host compilations (as -Xarch_host <flag> in a
// HIP/CUDA compilation), device flags to the device side only (-Xarch_device <flag>),
// of every HIP/CUDA compilation or, when device units are named, of those whose input
// path contains one of them. Common device flags go to every HIP/CUDA compilation
// whatever the units, after the compilation's own flags (a compiler that already
// differs everywhere, changed in one unit).
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
const std::vector<std::string> &extraDeviceUnits();
const std::vector<std::string> &extraCommonDeviceFlags();
} // namespace driver
} // namespace clang

#endif
