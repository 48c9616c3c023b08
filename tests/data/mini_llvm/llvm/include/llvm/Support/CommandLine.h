//===- llvm/Support/CommandLine.h - Command line handling -------*- C++ -*-===//
//
// The one piece of LLVM's command-line library this tree has: the version message.
//
//===----------------------------------------------------------------------===//
#ifndef LLVM_SUPPORT_COMMANDLINE_H
#define LLVM_SUPPORT_COMMANDLINE_H

namespace llvm {
namespace cl {

/// What `--version` prints for LLVM's tools (CommandLine.cpp's VersionPrinter):
/// "LLVM (http://llvm.org/):", "  LLVM version <PACKAGE_VERSION>", "  Optimized build.".
void PrintVersionMessage();

/// Whether the command line is `<tool> --version` (or `-version`), and nothing else.
bool isBareVersionRequest(int argc, char **argv);

} // namespace cl
} // namespace llvm

#endif
