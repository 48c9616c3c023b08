//===- driver.cpp - Clang GCC-Compatible Driver -----------------*- C++ -*-===//
//
// The clang entry point: everything happens in clang::driver::run.
//
//===----------------------------------------------------------------------===//

#include "clang/Driver/Driver.h"

int main(int argc, char **argv) { return clang::driver::run(argc, argv); }
