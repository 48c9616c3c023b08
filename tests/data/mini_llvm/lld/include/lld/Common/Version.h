//===- lld/Common/Version.h - LLD Version Number ----------------*- C++ -*-===//
#ifndef LLD_VERSION_H
#define LLD_VERSION_H

#include <string>

namespace lld {
/// Retrieves a string representing the complete lld version.
std::string getLLDVersion();
} // namespace lld

#endif // LLD_VERSION_H
