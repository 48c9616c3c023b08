//===- Version.h - Clang Version Number -------------------------*- C++ -*-===//
// The version strings, as clang/include/clang/Basic/Version.h declares them.
#ifndef CLANG_BASIC_VERSION_H
#define CLANG_BASIC_VERSION_H

#include <string>

namespace clang {
std::string getClangRepositoryPath();
std::string getLLVMRepositoryPath();
std::string getClangRevision();
std::string getLLVMRevision();
std::string getClangFullRepositoryVersion();
std::string getClangFullVersion();
std::string getClangToolFullVersion(const std::string &ToolName);
} // namespace clang

#endif
