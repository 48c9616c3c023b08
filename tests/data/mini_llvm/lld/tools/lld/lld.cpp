//===- lld.cpp - The LLD multicall driver -----------------------*- C++ -*-===//
//
// As lld's driver, the flavor comes from the name it is called by (ld.lld, ld) or from
// `-flavor gnu`. The GNU flavor runs the distribution ld.lld; other flavors are not in
// this stand-in.
//
//===----------------------------------------------------------------------===//

#include "lld/Common/config.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>
#include <unistd.h>

int main(int argc, char **argv) {
  std::string Name = argv[0];
  std::string::size_type Slash = Name.rfind('/');
  if (Slash != std::string::npos)
    Name = Name.substr(Slash + 1);
  int First = 1;
  bool Gnu = Name.compare(0, 6, "ld.lld") == 0 || Name == "ld";
  if (argc > 2 && std::strcmp(argv[1], "-flavor") == 0) {
    Gnu = std::strcmp(argv[2], "gnu") == 0;
    First = 3;
  }
  if (!Gnu) {
    std::cerr << "lld is a generic driver.\n"
                 "Invoke ld.lld (Unix), ld64.lld (macOS), lld-link (Windows), wasm-ld"
                 " (WebAssembly) instead\n";
    return 1;
  }
  std::string Target = MINI_LLVM_FORWARD_LLD;
  std::vector<char *> Exec = {&Target[0]};
  for (int I = First; I < argc; ++I)
    Exec.push_back(argv[I]);
  Exec.push_back(nullptr);
  execv(Target.c_str(), Exec.data());
  std::cerr << "lld: error: unable to execute " << Target << ": " << std::strerror(errno)
            << '\n';
  return 1;
}
