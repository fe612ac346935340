// Catch2's implementation (session, reporters, matchers), compiled once for every test program:
// each copy took 30 s to compile in a release build and 80 s under the sanitizers. Each program
// brings its own main (tests/main.cpp, tests/catch_main.cpp) and calls run_catch.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/catch_run.hpp"

int trine::test::run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }
