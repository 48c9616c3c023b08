//===- llvm-objdump.cpp - Object file dumping utility -----------*- C++ -*-===//
//
// The stand-in: `llvm-objdump --version` is LLVM's version message; any other command
// line runs the distribution's llvm-objdump (found at configure time) with the same
// arguments, in the same directory (so --offloading writes its files where it would).
//
//===----------------------------------------------------------------------===//

#include "llvm/Config/config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Program.h"

int main(int argc, char **argv) {
  if (llvm::cl::isBareVersionRequest(argc, argv)) {
    llvm::cl::PrintVersionMessage();
    return 0;
  }
  return llvm::sys::ForwardArguments("llvm-objdump", MINI_LLVM_FORWARD_LLVM_OBJDUMP, argc,
                                     argv);
}
