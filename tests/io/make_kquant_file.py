#!/usr/bin/env python3
"""Writes tests/io/kquants.gguf: weights and the q4_k, q5_k and q6_k blocks that ggml's reference
quantizers (quantize_row_q4_K_ref, quantize_row_q5_K_ref, quantize_row_q6_K_ref in ggml's
src/ggml-quants.c, code trine did not write) make of them, as tensors and again as u8 metadata
arrays, for tests/io_tests.cpp to compare trine's quant::quantize with byte for byte.

The weights: six super-blocks of 256 from a fixed generator, the second all zero, the third all
positive (no min to subtract), one outlier, one of values near 1e-6 and one near 1e3.

The file is checked in (about 10 KB), so the tests need neither ggml nor Python. To rebuild it
(ggml d99724f2 made the one checked in):

    git clone https://github.com/ggml-org/ggml /tmp/ggml-src
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf==0.19.0
    cd tests/io && /tmp/venv/bin/python make_kquant_file.py /tmp/ggml-src
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V

DRIVER = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "ggml-quants.h"
/* The rest of ggml, which the reference quantizers do not call. */
void ggml_abort(const char* file, int line, const char* fmt, ...) { (void)fmt; fprintf(stderr, "%s:%d\n", file, line); abort(); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; abort(); }
const char* ggml_type_name(enum ggml_type type) { (void)type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void)type; abort(); }
int main(int argc, char** argv) {
  enum { n = 256 * 6 };
  static float x[n];
  unsigned s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1103515245u + 12345u;
    x[i] = ((s >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  for (int i = 0; i < 256; ++i) x[i] *= 3.0f;
  for (int i = 256; i < 512; ++i) x[i] = 0.0f;
  for (int i = 512; i < 768; ++i) x[i] = fabsf(x[i]) + 0.25f;
  x[800] = -40.0f;
  for (int i = 1024; i < 1280; ++i) x[i] *= 1e-6f;
  for (int i = 1280; i < 1536; ++i) x[i] *= 3000.0f;
  static unsigned char q4[144 * 6], q5[176 * 6], q6[210 * 6];
  quantize_row_q4_K_ref(x, (block_q4_K*)q4, n);
  quantize_row_q5_K_ref(x, (block_q5_K*)q5, n);
  quantize_row_q6_K_ref(x, (block_q6_K*)q6, n);
  FILE* f = fopen(argv[1], "wb");
  fwrite(x, 4, n, f);
  fwrite(q4, 1, sizeof q4, f);
  fwrite(q5, 1, sizeof q5, f);
  fwrite(q6, 1, sizeof q6, f);
  return fclose(f) != 0;
}
"""

ggml = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    driver, exe, out = (os.path.join(tmp, n) for n in ("driver.c", "driver", "out.bin"))
    with open(driver, "w") as f:
        f.write(DRIVER)
    subprocess.run(["gcc", "-O2", "-std=c11", "-w", driver, os.path.join(ggml, "src", "ggml-quants.c"),
                    "-I" + os.path.join(ggml, "include"), "-I" + os.path.join(ggml, "src"), "-lm", "-o", exe],
                   check=True)
    subprocess.run([exe, out], check=True)
    data = open(out, "rb").read()

x = np.frombuffer(data[:1536 * 4], dtype=np.float32).reshape(6, 256)
at = 1536 * 4
writer = gguf.GGUFWriter("kquants.gguf", "test")
writer.add_tensor("x", x)
for name, t in (("x.q4_k", T.Q4_K), ("x.q5_k", T.Q5_K), ("x.q6_k", T.Q6_K)):
    size = gguf.GGML_QUANT_SIZES[t][1] * 6
    blocks = np.frombuffer(data[at:at + size], dtype=np.uint8).reshape(6, -1)
    at += size
    writer.add_tensor(name, blocks, raw_shape=blocks.shape, raw_dtype=t)
    writer.add_key_value(name + ".bytes", [int(v) for v in blocks.ravel()], V.ARRAY, sub_type=V.UINT8)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
