//===- llvm-readobj.cpp - Dump contents of an Object File -------*- C++ -*-===//
//
// The stand-in: as llvm-readobj, the output style comes from the name it is called by
// (*readelf*: GNU, llvm-readelf; else LLVM, llvm-readobj). A bare --version is LLVM's
// version message; anything else runs the distribution's tool of that style.
//
//===----------------------------------------------------------------------===//

#include "llvm/Config/config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Program.h"

#include <string>

int main(int argc, char **argv) {
  std::string Name = argv[0];
  std::string::size_type Slash = Name.rfind('/');
  if (Slash != std::string::npos)
    Name = Name.substr(Slash + 1);
  bool GNU = Name.find("readelf") != std::string::npos;

  if (llvm::cl::isBareVersionRequest(argc, argv)) {
    llvm::cl::PrintVersionMessage();
    return 0;
  }
  if (GNU)
    return llvm::sys::ForwardArguments("llvm-readelf", MINI_LLVM_FORWARD_LLVM_READELF, argc,
                                       argv);
  return llvm::sys::ForwardArguments("llvm-readobj", MINI_LLVM_FORWARD_LLVM_READOBJ, argc,
                                     argv);
}
