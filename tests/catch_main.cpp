// Catch2's plain main, for the test programs that need no set-up of their own.
#include "tests/catch_run.hpp"

int main(int argc, char** argv) { return trine::test::run_catch(argc, argv); }
