//===- Program.cpp - Running other programs ---------------------*- C++ -*-===//
//
// exec(3) of a distribution tool in place of the running one.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/Program.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace llvm {
namespace sys {

int ExecuteInPlace(const std::string &ToolName, const std::string &Program,
                   const std::vector<std::string> &Args) {
  std::vector<char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  execv(Program.c_str(), Argv.data());
  std::cerr << ToolName << ": error: unable to execute " << Program << ": "
            << std::strerror(errno) << '\n';
  return 1;
}

int ForwardArguments(const std::string &ToolName, const std::string &Program, int argc,
                     char **argv, int First) {
  std::vector<std::string> Args = {Program};
  for (int I = First; I < argc; ++I)
    Args.push_back(argv[I]);
  return ExecuteInPlace(ToolName, Program, Args);
}

} // namespace sys
} // namespace llvm
