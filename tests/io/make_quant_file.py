#!/usr/bin/env python3
"""Writes tests/io/quants.gguf with the `gguf` package (0.19.0, PyPI) and numpy: known answers for
trine's block formats (include/trine/quant.hpp), made by code trine did not write.

  x            f32 [2, 64]: weights of many magnitudes (a block of zeros, one with a single
               outlier, a negative maximum, values that round half-way)
  x.q8_0       x quantized by gguf.quants (bit for bit ggml's reference quantizer), and the same
  x.q4_0       blocks again as the metadata x.q8_0.bytes / x.q4_0.bytes (u8 arrays)
  r.q4_k, r.q5_k, r.q6_k
               [2, 256]: random blocks (every bit pattern of the scales and quants), the first
               with d = 0, a second with d = 65504 (the f16 maximum), q6_k's int8 scales negative too
  <name>.expected
               f32: gguf.quants.dequantize of each quantized tensor

The file is checked in (a few KB), so the tests need no Python; rerun this only to change it:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf==0.19.0
    cd tests/io && /tmp/venv/bin/python make_quant_file.py
"""
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V

rng = np.random.default_rng(29)
x = (rng.standard_normal((2, 64)) * np.array([[1.0], [300.0]])).astype(np.float32)
x[0, 0:32] = 0.0  # a block of zeros: d = 0
x[0, 40] = -50.0  # an outlier, negative: q4_0's d from a negative maximum
x[1, 32:64] = np.arange(32, dtype=np.float32) - 15.5  # half-way values
blocks = {name: gguf.quants.quantize(x, t) for name, t in (("x.q8_0", T.Q8_0), ("x.q4_0", T.Q4_0))}

writer = gguf.GGUFWriter("quants.gguf", "test")
writer.add_tensor("x", x)
for name, t in (("x.q8_0", T.Q8_0), ("x.q4_0", T.Q4_0)):
    b = blocks[name]
    writer.add_tensor(name, b, raw_shape=b.shape, raw_dtype=t)
    writer.add_key_value(name + ".bytes", [int(v) for v in b.ravel()], V.ARRAY, sub_type=V.UINT8)
    writer.add_tensor(name + ".expected", gguf.quants.dequantize(b, t).astype(np.float32))

for name, t in (("r.q4_k", T.Q4_K), ("r.q5_k", T.Q5_K), ("r.q6_k", T.Q6_K)):
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[t]
    r = rng.integers(0, 256, size=(2, 256 // block_elems * block_bytes), dtype=np.uint8)
    d_at = 208 if t == T.Q6_K else 0  # where the block's f16 d is
    r[0, d_at:d_at + 2] = np.array([0], dtype=np.float16).view(np.uint8)
    r[1, d_at:d_at + 2] = np.array([65504], dtype=np.float16).view(np.uint8)
    if t != T.Q6_K:  # dmin: an ordinary value, so d = 65504 does not meet an inf from it
        r[:, 2:4] = np.array([0.25], dtype=np.float16).view(np.uint8)
    writer.add_tensor(name, r, raw_shape=r.shape, raw_dtype=t)
    writer.add_tensor(name + ".expected", gguf.quants.dequantize(r, t).astype(np.float32))

writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
