//===- Driver.cpp - The stand-in clang driver -------------------*- C++ -*-===//
//
// A bare `--version` is answered here, in the format clang's Driver::PrintVersion
// uses. Everything else (-v, -###, -print-*, compilations, links) runs the
// distribution clang found at configure time, so CMake's compiler checks see that
// compiler; compilations get the extra flags of ExtraFlags.cpp.
//
//===----------------------------------------------------------------------===//

#include "clang/Driver/Driver.h"
#include "clang/Basic/Version.h"
#include "clang/Config/config.h"
#include "clang/Driver/ExtraFlags.h"
#include "llvm/Support/Program.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>
#include <unistd.h>

namespace clang {
namespace driver {
namespace {

std::string baseName(const std::string &Path) {
  std::string::size_type Slash = Path.rfind('/');
  return Slash == std::string::npos ? Path : Path.substr(Slash + 1);
}

bool endsWith(const std::string &S, const std::string &Suffix) {
  return S.size() >= Suffix.size() &&
         S.compare(S.size() - Suffix.size(), Suffix.size(), Suffix) == 0;
}

bool startsWith(const std::string &S, const std::string &Prefix) {
  return S.compare(0, Prefix.size(), Prefix) == 0;
}

// The directory of the running binary with symlinks resolved: clang's Dir with
// canonical prefixes (the default), so clang++ -> clang names the same directory.
std::string installedDir(const char *Argv0) {
  std::string Path;
  char Buf[PATH_MAX];
  ssize_t N = readlink("/proc/self/exe", Buf, sizeof(Buf) - 1);
  if (N > 0) {
    Path.assign(Buf, static_cast<std::string::size_type>(N));
  } else if (char *Real = realpath(Argv0, nullptr)) {
    Path = Real;
    free(Real);
  } else {
    Path = Argv0;
  }
  std::string::size_type Slash = Path.rfind('/');
  if (Slash == std::string::npos)
    return ".";
  return Slash == 0 ? "/" : Path.substr(0, Slash);
}

void printVersion(const char *Argv0) {
  std::cout << getClangFullVersion() << '\n'
            << "Target: " << LLVM_DEFAULT_TARGET_TRIPLE << '\n'
            << "Thread model: posix\n"
            << "InstalledDir: " << installedDir(Argv0) << '\n';
}

// What a command line compiles: nothing (a link, a query), host code, or HIP/CUDA
// code with a device side.
struct Compilation {
  bool Compiles = false;
  bool Offload = false;
  bool HostOnly = false;
  bool DeviceOnly = false;
  std::vector<std::string> Inputs;
};

// Whether the device flags apply: every offload compilation, or, when ExtraFlags.cpp
// names units, one whose input path contains one of them (a change to some kernels only).
bool deviceFlagsApply(const Compilation &C) {
  if (extraDeviceUnits().empty())
    return true;
  for (const std::string &Input : C.Inputs)
    for (const std::string &Unit : extraDeviceUnits())
      if (Input.find(Unit) != std::string::npos)
        return true;
  return false;
}

// Options whose value is the next argument, so the value is never taken for an input.
const std::set<std::string> &separateValueOptions() {
  static const std::set<std::string> Options = {
      "-o",        "-x",          "-I",         "-D",        "-U",
      "-MF",       "-MT",         "-MQ",        "-MJ",       "-include",
      "-imacros",  "-isystem",    "-iquote",    "-idirafter", "-isysroot",
      "-iprefix",  "-Xlinker",    "-Xclang",    "-Xassembler", "-Xpreprocessor",
      "-Xarch_host", "-Xarch_device", "-Xoffload-linker", "-mllvm", "-target",
      "-L",        "-l",          "-z",         "-T",        "-u",
      "--sysroot", "-arch",       "-Xopenmp-target", "-ivfsoverlay", "-main-file-name"};
  return Options;
}

bool isOffloadLanguage(const std::string &Lang) {
  return Lang == "hip" || Lang == "cuda" || Lang == "hip-cpp-output" ||
         Lang == "cuda-cpp-output";
}

// The language clang would give an input by its extension ("" when it links it).
std::string languageOf(const std::string &Input) {
  static const char *const Host[] = {".c",   ".cc",  ".cp", ".cpp", ".cxx", ".c++",
                                     ".C",   ".CC",  ".CPP", ".cppm", ".ixx", ".i",
                                     ".ii",  ".m",   ".mm", ".M",   ".mi",  ".mii"};
  if (endsWith(Input, ".hip"))
    return "hip";
  if (endsWith(Input, ".cu"))
    return "cuda";
  for (const char *Ext : Host)
    if (endsWith(Input, Ext))
      return "c";
  return "";
}

Compilation classify(int Argc, char **Argv) {
  Compilation C;
  std::string Lang;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (separateValueOptions().count(A)) {
      if (A == "-x" && I + 1 < Argc)
        Lang = Argv[I + 1];
      ++I;
      continue;
    }
    if (startsWith(A, "-x") && A.size() > 2) {
      Lang = A.substr(2);
      continue;
    }
    if (A == "--cuda-host-only" || A == "--offload-host-only")
      C.HostOnly = true;
    else if (A == "--cuda-device-only" || A == "--offload-device-only")
      C.DeviceOnly = true;
    if (A != "-" && startsWith(A, "-"))
      continue;
    std::string InputLang = (!Lang.empty() && Lang != "none") ? Lang : languageOf(A);
    if (InputLang.empty())
      continue;
    C.Compiles = true;
    C.Inputs.push_back(A);
    C.Offload = C.Offload || isOffloadLanguage(InputLang);
  }
  return C;
}

} // namespace

int run(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    printVersion(argv[0]);
    return 0;
  }
  // clang vs clang++ by the name it was called by, as clang's driver decides its mode.
  bool CXX = baseName(argv[0]).find("++") != std::string::npos;
  std::string Target = CXX ? MINI_LLVM_FORWARD_CLANGXX : MINI_LLVM_FORWARD_CLANG;

  std::vector<std::string> Args = {Target};
  Compilation C = classify(argc, argv);
  if (C.Compiles) {
    if (!C.Offload) {
      for (const std::string &Flag : extraHostFlags())
        Args.push_back(Flag);
    } else {
      if (!C.DeviceOnly)
        for (const std::string &Flag : extraHostFlags()) {
          Args.push_back("-Xarch_host");
          Args.push_back(Flag);
        }
      if (!C.HostOnly && deviceFlagsApply(C))
        for (const std::string &Flag : extraDeviceFlags()) {
          Args.push_back("-Xarch_device");
          Args.push_back(Flag);
        }
    }
  }
  for (int I = 1; I < argc; ++I)
    Args.push_back(argv[I]);
  // After the build's own flags, so they win over them (-ffp-contract=off over the
  // -ffast-math GROMACS gives HIP code), as a change inside the compiler would.
  if (C.Compiles && C.Offload && !C.HostOnly)
    for (const std::string &Flag : extraCommonDeviceFlags()) {
      Args.push_back("-Xarch_device");
      Args.push_back(Flag);
    }
  return llvm::sys::ExecuteInPlace("clang", Target, Args);
}

} // namespace driver
} // namespace clang
