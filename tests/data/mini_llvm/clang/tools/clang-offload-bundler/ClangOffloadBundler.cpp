//===-- clang-offload-bundler/ClangOffloadBundler.cpp -----------*- C++ -*-===//
//
// The stand-in: `clang-offload-bundler --version` prints what the real one prints
// (clang::getClangToolFullVersion("clang-offload-bundler")); any other command line
// runs the distribution's clang-offload-bundler with the same arguments.
//
//===----------------------------------------------------------------------===//

#include "clang/Basic/Version.h"
#include "clang/Config/config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Program.h"

#include <iostream>

int main(int argc, char **argv) {
  if (llvm::cl::isBareVersionRequest(argc, argv)) {
    std::cout << clang::getClangToolFullVersion("clang-offload-bundler") << '\n';
    return 0;
  }
  return llvm::sys::ForwardArguments("clang-offload-bundler",
                                     MINI_LLVM_FORWARD_CLANG_OFFLOAD_BUNDLER, argc, argv);
}
