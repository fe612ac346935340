// Runs Catch2's session: its implementation is compiled once, in tests/catch_impl.cpp, for every
// test program; Catch2 v2 declares Session only where the implementation is compiled.
#pragma once

namespace trine::test {
int run_catch(int argc, char** argv);
}
