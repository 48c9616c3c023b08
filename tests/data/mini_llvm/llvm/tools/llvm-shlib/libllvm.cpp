//===-libllvm.cpp - LLVM Shared Library -----------------------------------===//
//
// This file is empty and serves only the purpose of making CMake happy because
// you can't define a target with no sources.
//
//===----------------------------------------------------------------------===//
