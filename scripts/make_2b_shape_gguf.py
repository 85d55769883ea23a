#!/usr/bin/env python3
"""Writes a GGUF with the tensor shapes of Qwen3-VL-2B's language model, every projection,
the embedding and output in Q8_0 (norms in F32), for measuring `twinbit pack` on a model of the
real size where no model can be downloaded (docs/results/import-*.md).

The values are pseudo-random Q8_0 blocks (an fp16 scale in [2^-10, 2^-6), int8 codes): what is
measured is time and memory, not numerics. Tensors of one shape share one array, so the script
needs about the largest tensor's bytes of memory (~330 MB), not the file's (~2.2 GB).

Needs the gguf and numpy packages (a venv outside the repository):
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf numpy
    /tmp/venv/bin/python scripts/make_2b_shape_gguf.py big.gguf
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter

LAYERS, HIDDEN, INTERMEDIATE = 28, 2048, 6144
HEADS, KV_HEADS, HEAD_DIM, VOCAB = 16, 8, 128, 151936


def q8_0_rows(rng, n, k):
    """n rows of k/32 Q8_0 blocks (fp16 d, 32 int8), as the uint8 array gguf-py writes raw."""
    blocks = np.empty((n, k // 32, 34), dtype=np.uint8)
    d = rng.uniform(2.0**-10, 2.0**-6, size=(n, k // 32)).astype(np.float16)
    blocks[:, :, 0:2] = d.view(np.uint8).reshape(n, k // 32, 2)
    blocks[:, :, 2:] = rng.integers(-127, 128, size=(n, k // 32, 32), dtype=np.int8).view(np.uint8)
    return blocks.reshape(n, k // 32 * 34)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_2b_shape_gguf.py OUT.gguf")
    rng = np.random.default_rng(2)
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    shapes = {  # (n outputs, k inputs)
        "attn_q": (q, HIDDEN), "attn_k": (kv, HIDDEN), "attn_v": (kv, HIDDEN),
        "attn_output": (HIDDEN, q), "ffn_gate": (INTERMEDIATE, HIDDEN),
        "ffn_up": (INTERMEDIATE, HIDDEN), "ffn_down": (HIDDEN, INTERMEDIATE),
    }
    arrays = {}
    for (n, k) in set(shapes.values()):
        arrays[(n, k)] = q8_0_rows(rng, n, k)
    embd = q8_0_rows(rng, VOCAB, HIDDEN)
    norm = rng.uniform(0.5, 1.5, size=HIDDEN).astype(np.float32)
    head_norm = rng.uniform(0.5, 1.5, size=HEAD_DIM).astype(np.float32)

    w = GGUFWriter(sys.argv[1], "qwen3")
    w.add_block_count(LAYERS)
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(INTERMEDIATE)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_tensor("token_embd.weight", embd, raw_dtype=GGMLQuantizationType.Q8_0)
    for i in range(LAYERS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", norm)
        for name, shape in shapes.items():
            w.add_tensor(f"blk.{i}.{name}.weight", arrays[shape], raw_dtype=GGMLQuantizationType.Q8_0)
        w.add_tensor(f"blk.{i}.attn_q_norm.weight", head_norm)
        w.add_tensor(f"blk.{i}.attn_k_norm.weight", head_norm)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", norm)
    w.add_tensor("output_norm.weight", norm)
    w.add_tensor("output.weight", embd, raw_dtype=GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


if __name__ == "__main__":
    main()
