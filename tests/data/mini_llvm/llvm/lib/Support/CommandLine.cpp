//===- CommandLine.cpp - Command line handling ------------------*- C++ -*-===//
//
// The version message of LLVM's tools, as CommandLine.cpp's VersionPrinter prints it
// (without the extra printers some tools register, such as the registered targets).
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/CommandLine.h"
#include "llvm/Config/config.h"

#include <cstring>
#include <iostream>

namespace llvm {
namespace cl {

void PrintVersionMessage() {
  std::ostream &OS = std::cout;
  OS << "LLVM (http://llvm.org/):\n  ";
  OS << PACKAGE_NAME << " version " << PACKAGE_VERSION << "\n  ";
#if LLVM_IS_DEBUG_BUILD
  OS << "DEBUG build";
#else
  OS << "Optimized build";
#endif
#ifndef NDEBUG
  OS << " with assertions";
#endif
  OS << ".\n";
}

bool isBareVersionRequest(int argc, char **argv) {
  return argc == 2 &&
         (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-version") == 0);
}

} // namespace cl
} // namespace llvm
