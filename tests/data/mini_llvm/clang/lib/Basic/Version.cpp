//===- Version.cpp - Clang Version Number -----------------------*- C++ -*-===//
//
// The version line, built as clang/lib/Basic/Version.cpp builds it: "clang version
// <CLANG_VERSION_STRING>" and, when a revision is known, " (<repository> <revision>)";
// LLVM's revision is added only when it differs from clang's.
//
//===----------------------------------------------------------------------===//

#include "clang/Basic/Version.h"
#include "clang/Basic/Version.inc"

#include <sstream>

#include "VCSVersion.inc"

namespace clang {

std::string getClangRepositoryPath() {
#ifdef CLANG_REPOSITORY
  return CLANG_REPOSITORY;
#else
  return "";
#endif
}

std::string getLLVMRepositoryPath() {
#ifdef LLVM_REPOSITORY
  return LLVM_REPOSITORY;
#else
  return "";
#endif
}

std::string getClangRevision() {
#ifdef CLANG_REVISION
  return CLANG_REVISION;
#else
  return "";
#endif
}

std::string getLLVMRevision() {
#ifdef LLVM_REVISION
  return LLVM_REVISION;
#else
  return "";
#endif
}

std::string getClangFullRepositoryVersion() {
  std::ostringstream OS;
  std::string Path = getClangRepositoryPath();
  std::string Revision = getClangRevision();
  if (!Path.empty() || !Revision.empty()) {
    OS << '(';
    if (!Path.empty())
      OS << Path;
    if (!Revision.empty()) {
      if (!Path.empty())
        OS << ' ';
      OS << Revision;
    }
    OS << ')';
  }
  // Support LLVM in a separate repository.
  std::string LLVMRev = getLLVMRevision();
  if (!LLVMRev.empty() && LLVMRev != Revision) {
    OS << " (";
    std::string LLVMRepo = getLLVMRepositoryPath();
    if (!LLVMRepo.empty())
      OS << LLVMRepo << ' ';
    OS << LLVMRev << ')';
  }
  return OS.str();
}

std::string getClangFullVersion() { return getClangToolFullVersion("clang"); }

std::string getClangToolFullVersion(const std::string &ToolName) {
  std::ostringstream OS;
#ifdef CLANG_VENDOR
  OS << CLANG_VENDOR;
#endif
  OS << ToolName << " version " CLANG_VERSION_STRING;
  std::string repo = getClangFullRepositoryVersion();
  if (!repo.empty())
    OS << " " << repo;
  return OS.str();
}

} // namespace clang
