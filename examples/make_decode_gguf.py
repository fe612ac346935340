#!/usr/bin/env python3
"""Writes the model and the reference of examples/decode_gguf.cpp: a one-block llama-style model of
random weights in a GGUF file, and the logits of its decode steps over a fixed token sequence,
computed in float64 with numpy (nothing else: no gguf package, no ggml).

    python3 examples/make_decode_gguf.py model.gguf reference.gguf
    build/release/decode_gguf_example model.gguf --check reference.gguf

model.gguf has the llama.* metadata keys and the tensor names llama.cpp uses for a "llama" model
(but no tokenizer: the example takes token ids): f32 embedding and norms, and k-quant projections
(q4_k, q5_k and q6_k, so that each format appears) of random blocks, every bit pattern of the
quants and 6-bit scales possible, the f16 super-block scales set so that a weight is of order
1/sqrt(fan_in). reference.gguf holds three tensors: tokens (i32 [steps]), logits (f32 [steps,
vocab]: step i's logits after reading tokens[0..i]) and tolerance (f32 [steps]: the largest
|error| a correct implementation may show at that step; why: `tolerance` below).

Rope rotates adjacent pairs (x[2i], x[2i+1]), ggml's normal mode, which is what llama.cpp applies
to a "llama" GGUF file (its converter permutes the q and k rows of Hugging Face checkpoints so).
"""
import struct
import sys

import numpy as np

# The model: head_dim 64, grouped-query attention (2 query heads per kv head). Every k (the row
# length of a projection: dim or mlp) is a multiple of 256, the k-quants' super-block.
DIM, HEADS, KV_HEADS, MLP, VOCAB, CONTEXT = 256, 4, 2, 512, 256, 64
ROPE_BASE, EPS = 10000.0, 1e-5
TOKENS = [1, 7, 42, 3, 200, 99]
HEAD_DIM = DIM // HEADS

# ---- GGUF (version 3, little-endian): the writer ----
# ggml's tensor types and GGUF's metadata value types, by their numbers in the file.
F32, Q4_K, Q5_K, Q6_K, I32 = 0, 12, 13, 14, 26
U32, I32_VALUE, F32_VALUE, STRING = 4, 5, 6, 8
ALIGNMENT = 32


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(value_type, v):
    if value_type == STRING:
        return gguf_string(v)
    return struct.pack({U32: "<I", I32_VALUE: "<i", F32_VALUE: "<f"}[value_type], v)


def write_gguf(path, metadata, tensors):
    """metadata: (key, value type, value); tensors: (name, ggml type, shape outermost first, bytes)."""
    metadata = [("general.alignment", U32, ALIGNMENT)] + metadata
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, value_type, v in metadata:
        out += gguf_string(key) + struct.pack("<I", value_type) + gguf_value(value_type, v)
    offset = 0
    for name, ggml_type, shape, data in tensors:
        # GGUF lists the dims innermost first: ne[0] is the row length.
        out += gguf_string(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        out += struct.pack("<IQ", ggml_type, offset)
        offset += -(-len(data) // ALIGNMENT) * ALIGNMENT
    for _, _, _, data in tensors:
        out += bytes(-len(out) % ALIGNMENT) + data
    with open(path, "wb") as f:
        f.write(out)


# ---- k-quant blocks (GGUF's layouts; include/trine/quant.hpp has them too) ----
BLOCK_BYTES = {Q4_K: 144, Q5_K: 176, Q6_K: 210}


def f16_at(blocks, at):
    return blocks[:, at:at + 2].copy().view(np.float16).astype(np.float32)  # [blocks, 1]


def scales_mins_k4(s):
    """q4_k's and q5_k's eight 6-bit scales and mins, packed in 12 bytes s [blocks, 12]."""
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], axis=1)
    m = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
    return sc.astype(np.float32), m.astype(np.float32)


def dequantize(blocks, ggml_type):
    """blocks [n, block bytes] uint8 -> the weights [n, 256], in the formats' f32 arithmetic."""
    n = blocks.shape[0]
    if ggml_type in (Q4_K, Q5_K):
        # d, dmin (f16), 12 bytes of scales and mins, [q5_k: 32 bytes of fifth bits,] 128 of nibbles:
        # sub-blocks 2g and 2g+1 of 32 are the low and the high nibbles of bytes 32g..32g+31, and
        # bit j of fifth-bit byte i belongs to weight i of sub-block j. w = d sc_j q - dmin m_j.
        d, dmin = f16_at(blocks, 0), f16_at(blocks, 2)
        sc, m = scales_mins_k4(blocks[:, 4:16])
        qs = blocks[:, -128:].reshape(n, 4, 1, 32)
        q = np.concatenate([qs & 15, qs >> 4], axis=2).reshape(n, 8, 32)
        if ggml_type == Q5_K:
            qh = blocks[:, 16:48].reshape(n, 1, 32)
            q = q | (((qh >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1) << 4)
        w = (d * sc)[:, :, None] * q.astype(np.float32) - (dmin * m)[:, :, None]
    else:
        # q6_k: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, d (f16). Weight
        # 128h + 32p + i: low nibble of byte 64h + 32(p % 2) + i (the high nibble for p >= 2),
        # bits 2p, 2p+1 of byte 128 + 32h + i; scale (weight index) // 16. w = d scale (q - 32).
        ql = blocks[:, 0:128].reshape(n, 2, 1, 2, 32)
        low = np.concatenate([ql & 15, ql >> 4], axis=2).reshape(n, 2, 4, 32)
        qh = blocks[:, 128:192].reshape(n, 2, 1, 32)
        high = (qh >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)) & 3
        q = (low | (high << 4)).reshape(n, 16, 16).astype(np.float32) - 32.0
        scale = blocks[:, 192:208].copy().view(np.int8).astype(np.float32)
        w = (f16_at(blocks, 208) * scale)[:, :, None] * q
    return w.reshape(n, 256).astype(np.float32)


def set_f16(blocks, at, values):
    blocks[:, at:at + 2] = values.astype(np.float16).reshape(-1, 1).view(np.uint8)


def random_blocks(rng, ggml_type, rows, k):
    """Random blocks for a [rows, k] weight: random bytes, then d (and dmin) rescaled so that the
    weights' standard deviation is about 1/sqrt(k), each super-block's scale varying by 2x."""
    n = rows * k // 256
    blocks = rng.integers(0, 256, size=(n, BLOCK_BYTES[ggml_type]), dtype=np.uint8)
    # Unit scales first, to measure the spread the random quants and sub-block scales give. dmin
    # is the mean quant (7.5 for 4 bits, 15.5 for 5), so that the weights' mean is about zero.
    d_at = 208 if ggml_type == Q6_K else 0
    mean_q = {Q4_K: 7.5, Q5_K: 15.5, Q6_K: 0.0}[ggml_type]
    set_f16(blocks, d_at, np.ones(n))
    if ggml_type != Q6_K:
        set_f16(blocks, 2, np.full(n, mean_q))
    unit = 1.0 / (np.sqrt(k) * dequantize(blocks, ggml_type).std())
    vary = rng.uniform(0.7, 1.4, size=n)
    set_f16(blocks, d_at, unit * vary)
    if ggml_type != Q6_K:
        set_f16(blocks, 2, unit * mean_q * vary * rng.uniform(0.9, 1.1, size=n))
    return blocks


# ---- the model in float64 ----
def rmsnorm(x, g):
    return x / np.sqrt(np.mean(x * x) + EPS) * g


def rope(x, position):
    """x [heads, head_dim]: pair i is (x[2i], x[2i+1]), turned by position * base^(-2i/head_dim)."""
    angle = position * ROPE_BASE ** (-2.0 * np.arange(HEAD_DIM // 2) / HEAD_DIM)
    x0, x1 = x[:, 0::2], x[:, 1::2]
    y = np.empty_like(x)
    y[:, 0::2] = x0 * np.cos(angle) - x1 * np.sin(angle)
    y[:, 1::2] = x0 * np.sin(angle) + x1 * np.cos(angle)
    return y


def round_8bit(x):
    """x as the cpu's quantized dot rounds it (avx2, avx512): per block of 32, to the nearest
    multiple of d = max|x|/127, in f32 (backends/cpu_simd/kernels/matmul_quant.cpp)."""
    xb = x.astype(np.float32).reshape(-1, 32)
    d = np.abs(xb).max(axis=1, keepdims=True) / np.float32(127)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
    return (np.rint(xb * inv) * d).astype(np.float64).reshape(-1)


def decode(w, tokens, rounded):
    """The logits [steps, vocab] of each step; rounded: x rounded as the cpu does before every
    product with a quantized weight."""
    def proj(name, x):
        return w[name] @ (round_8bit(x) if rounded else x)

    keys, values, logits = [], [], []
    for position, token in enumerate(tokens):
        x = w["token_embd.weight"][token]
        h = rmsnorm(x, w["blk.0.attn_norm.weight"])
        q = rope(proj("blk.0.attn_q.weight", h).reshape(HEADS, HEAD_DIM), position)
        keys.append(rope(proj("blk.0.attn_k.weight", h).reshape(KV_HEADS, HEAD_DIM), position))
        values.append(proj("blk.0.attn_v.weight", h).reshape(KV_HEADS, HEAD_DIM))
        k, v = np.stack(keys, axis=1), np.stack(values, axis=1)  # [kv heads, positions, head_dim]
        kv = np.arange(HEADS) // (HEADS // KV_HEADS)  # the kv head each query head reads
        scores = np.einsum("hd,hld->hl", q, k[kv]) / np.sqrt(HEAD_DIM)
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        attn = np.einsum("hl,hld->hd", p, v[kv]).reshape(DIM)
        x = x + proj("blk.0.attn_output.weight", attn)
        n = rmsnorm(x, w["blk.0.ffn_norm.weight"])
        gate = proj("blk.0.ffn_gate.weight", n)
        x = x + proj("blk.0.ffn_down.weight", gate / (1.0 + np.exp(-gate)) * proj("blk.0.ffn_up.weight", n))
        logits.append(proj("output.weight", rmsnorm(x, w["output_norm.weight"])))
    return np.array(logits)


def tolerance(exact, rounded):
    """The largest |error| allowed at each step.

    The cpu's quantized gemv (avx2, avx512) computes with x rounded to 8 bits per block of 32: each
    element moves by up to max|x_block|/254, and a dot by up to sum|w| max|x_block|/254
    (docs/ops.md). That worst case is no use carried through a whole step (attention's exp makes
    it grow past any logit), so the script instead applies that rounding to every projection's
    input in the float64 model (round_8bit), and the distance of those logits from the exact ones
    is the error the cpu's rounding causes at this step. A correct cpu run sits within f32 noise
    of the rounded model (its x differs only where an f32 value lies within an ulp of a rounding
    boundary), and the GPU backends, which keep x in f32, far inside it. Twice that distance leaves
    room for such differences and for the sums' f32 order; 1e-4 of the largest logit covers f32
    arithmetic where the rounding's effect is small. A wrong weight, scale or layout moves logits
    by a good fraction of their size, far beyond it."""
    scale = np.abs(exact).max(axis=1)
    return 2.0 * np.abs(rounded - exact).max(axis=1) + 1e-4 * scale


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_decode_gguf.py model.gguf reference.gguf")
    rng = np.random.default_rng(29)
    kv_dim = KV_HEADS * HEAD_DIM
    # llama.cpp's names and order; shapes outermost first, as trine reads them (a projection is
    # [outputs, k]). f32: the embedding and the norms' gains; q, k, attn_output, gate and up q4_k,
    # v and down q5_k, output q6_k.
    layout = [
        ("token_embd.weight", F32, [VOCAB, DIM]),
        ("blk.0.attn_norm.weight", F32, [DIM]),
        ("blk.0.attn_q.weight", Q4_K, [DIM, DIM]),
        ("blk.0.attn_k.weight", Q4_K, [kv_dim, DIM]),
        ("blk.0.attn_v.weight", Q5_K, [kv_dim, DIM]),
        ("blk.0.attn_output.weight", Q4_K, [DIM, DIM]),
        ("blk.0.ffn_norm.weight", F32, [DIM]),
        ("blk.0.ffn_gate.weight", Q4_K, [MLP, DIM]),
        ("blk.0.ffn_up.weight", Q4_K, [MLP, DIM]),
        ("blk.0.ffn_down.weight", Q5_K, [DIM, MLP]),
        ("output_norm.weight", F32, [DIM]),
        ("output.weight", Q6_K, [VOCAB, DIM]),
    ]
    weights, tensors = {}, []
    for name, ggml_type, shape in layout:
        if ggml_type == F32:
            low, high = (-1.0, 1.0) if len(shape) == 2 else (0.8, 1.2)  # the embedding; a gain
            values = rng.uniform(low, high, size=shape).astype(np.float32)
            data = values.astype("<f4").tobytes()
        else:
            blocks = random_blocks(rng, ggml_type, *shape)
            values, data = dequantize(blocks, ggml_type).reshape(shape), blocks.tobytes()
        weights[name] = values.astype(np.float64)
        tensors.append((name, ggml_type, shape, data))
    write_gguf(sys.argv[1], [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "trine decode_gguf example (random weights)"),
        ("llama.context_length", U32, CONTEXT),
        ("llama.embedding_length", U32, DIM),
        ("llama.block_count", U32, 1),
        ("llama.feed_forward_length", U32, MLP),
        ("llama.attention.head_count", U32, HEADS),
        ("llama.attention.head_count_kv", U32, KV_HEADS),
        ("llama.rope.dimension_count", U32, HEAD_DIM),
        ("llama.rope.freq_base", F32_VALUE, ROPE_BASE),
        ("llama.attention.layer_norm_rms_epsilon", F32_VALUE, EPS),
    ], tensors)

    exact = decode(weights, TOKENS, rounded=False)
    tol = tolerance(exact, decode(weights, TOKENS, rounded=True))
    write_gguf(sys.argv[2], [("general.description", STRING, "reference logits of " + sys.argv[1])], [
        ("tokens", I32, [len(TOKENS)], np.array(TOKENS, dtype="<i4").tobytes()),
        ("logits", F32, list(exact.shape), exact.astype("<f4").tobytes()),
        ("tolerance", F32, [len(TOKENS)], tol.astype("<f4").tobytes()),
    ])
    print(f"wrote {sys.argv[1]} and {sys.argv[2]}: {len(TOKENS)} steps, max |logit| {np.abs(exact).max():.3f}, "
          f"tolerance {tol.min():.2e} to {tol.max():.2e}")


if __name__ == "__main__":
    main()
