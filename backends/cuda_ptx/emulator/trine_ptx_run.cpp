// trine-ptx-run: the emulator's command-line runner on its own, until tools/trine-ptx wires it in.
#include "backends/cuda_ptx/emulator/run_cli.hpp"

int main(int argc, char** argv) { return trine::cuda::emu::run_ptx_command(argc, argv); }
