//===- llvm/Support/Program.h - Running other programs ----------*- C++ -*-===//
//
// What the stand-in's tools do with the distribution's: become it. (LLVM's Program.h
// runs programs as children; this tree's tools forward to the distribution's tools.)
//
//===----------------------------------------------------------------------===//
#ifndef LLVM_SUPPORT_PROGRAM_H
#define LLVM_SUPPORT_PROGRAM_H

#include <string>
#include <vector>

namespace llvm {
namespace sys {

/// Replaces this process by Program run with Args (Args[0] is what it sees as argv[0]).
/// Returns only when that fails: 1, after "<ToolName>: error: unable to execute
/// <Program>: <reason>" on stderr.
int ExecuteInPlace(const std::string &ToolName, const std::string &Program,
                   const std::vector<std::string> &Args);

/// ExecuteInPlace of Program with argv[First..argc) after its own name.
int ForwardArguments(const std::string &ToolName, const std::string &Program, int argc,
                     char **argv, int First = 1);

} // namespace sys
} // namespace llvm

#endif
