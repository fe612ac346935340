#!/usr/bin/env python3
"""Writes tests/io/known.gguf and tests/io/known.safetensors with writers trine did not write: the
`gguf` (0.19.0) and `safetensors` (0.8.0) packages from PyPI, with numpy. tests/io_tests.cpp reads
them and checks every value, dim and metadata entry below. The files are checked in (544 and 276
bytes), so the tests need no Python; rerun this only to change them:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf==0.19.0 safetensors==0.8.0
    cd tests/io && /tmp/venv/bin/python make_known_files.py
"""
import numpy as np
import gguf
import safetensors.numpy


def values(n, scale, shift):
    return np.arange(n, dtype=np.float64) * scale + shift


w = values(6, 0.25, -1.0).astype(np.float32).reshape(2, 3)  # -1, -0.75, ... 0.25
h = values(8, 0.5, -2.0).astype(np.float16).reshape(2, 2, 2)  # -2, -1.5, ... 1.5
i = np.arange(5, dtype=np.int32) * 7 - 10  # -10, -3, 4, 11, 18
bf = np.arange(4, dtype=np.uint16) + 0x3F80  # bf16 bit patterns: 1, 1.0078125, 1.015625, 1.0234375

writer = gguf.GGUFWriter("known.gguf", "llama")
writer.add_uint32("llama.block_count", 2)
writer.add_float32("llama.rope.freq_base", 10000.0)
writer.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "hi"])
writer.add_bool("flag", True)
writer.add_tensor("w", w)
writer.add_tensor("h", h)
writer.add_tensor("i", i)
writer.add_tensor("bf", bf, raw_dtype=gguf.GGMLQuantizationType.BF16)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()

safetensors.numpy.save_file({"w": w, "h": h, "i": i}, "known.safetensors", metadata={"format": "np"})
