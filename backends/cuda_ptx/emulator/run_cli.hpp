// `trine-ptx run`: run one kernel of a PTX file on the emulator from the command line, with the
// checker's findings printed the way compute-sanitizer prints them.
#pragma once

namespace trine::cuda::emu {

// trine-ptx run FILE.ptx --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--arg SPEC]... [--shared BYTES]
//                [--no-check] [--threads N] [--dump] [--dump-dir DIR]
// SPEC: a scalar TYPE:VALUE (u32:1000, f32:0.5), or a buffer buf:TYPE:COUNT (seeded pattern),
// buf:TYPE:COUNT=VALUE (filled) or buf:TYPE:COUNT=@FILE (raw bytes read from FILE).
// argv[1] may be "run". Returns 0 when the run is clean, 1 when the checker found errors, 2 on a
// usage, file or PTX error.
int run_ptx_command(int argc, char** argv);

}  // namespace trine::cuda::emu
