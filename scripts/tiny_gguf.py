#!/usr/bin/env python3
"""Writes a tiny random-weight llama GGUF model for protocol tests of llama-server.

The model (vocab of 1000 SentencePiece-style tokens, 2 layers, 64 dimensions, about 1 MB) answers
with random word fragments: tests assert protocol behaviour (status codes, JSON shape, SSE framing,
errors), never content. It carries a CodeLlama-style chat template. Deterministic (fixed seed).

Usage: tiny_gguf.py OUT.gguf   (needs the PyPI packages gguf and numpy)
"""
import string
import sys

import numpy as np
from gguf import GGUFWriter, TokenType

VOCAB = 1000
DIM = 64
LAYERS = 2
HEADS = 4
FF = 128
CONTEXT = 32768
TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set sys = '<<SYS>>\\n' + messages[0]['content'] + '\\n<</SYS>>\\n\\n' %}"
    "{% set messages = messages[1:] %}{% else %}{% set sys = '' %}{% endif %}"
    "{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token + '[INST] ' + (sys if loop.first else '') + m['content'] + ' [/INST]' }}"
    "{% else %}{{ ' ' + m['content'] + ' ' + eos_token }}{% endif %}{% endfor %}"
)


def vocab():
    tokens = [("<unk>", TokenType.UNKNOWN), ("<s>", TokenType.CONTROL), ("</s>", TokenType.CONTROL)]
    tokens += [(f"<0x{b:02X}>", TokenType.BYTE) for b in range(256)]
    pieces = ["\u2581"] + list(string.ascii_letters + string.digits + string.punctuation)
    pieces += ["\u2581" + c for c in string.ascii_letters + string.digits]
    pieces += [a + b for a in string.ascii_lowercase for b in string.ascii_lowercase]
    seen = set()
    for p in pieces:
        if len(tokens) >= VOCAB:
            break
        if p not in seen:
            seen.add(p)
            tokens.append((p, TokenType.NORMAL))
    return tokens


def main(out):
    rng = np.random.default_rng(1234)
    w = GGUFWriter(out, "llama")
    w.add_name("tiny-test-llama")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(DIM)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(DIM // HEADS)
    w.add_file_type(0)
    tokens = vocab()
    w.add_tokenizer_model("llama")
    w.add_token_list([t for t, _ in tokens])
    w.add_token_scores([-float(i) for i in range(len(tokens))])
    w.add_token_types([int(k) for _, k in tokens])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(TEMPLATE)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    t("token_embd.weight", len(tokens), DIM)
    w.add_tensor("output_norm.weight", np.ones(DIM, dtype=np.float32))
    t("output.weight", len(tokens), DIM)
    for i in range(LAYERS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(DIM, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(DIM, dtype=np.float32))
        for part in ("q", "k", "v", "output"):
            t(f"blk.{i}.attn_{part}.weight", DIM, DIM)
        t(f"blk.{i}.ffn_gate.weight", FF, DIM)
        t(f"blk.{i}.ffn_up.weight", FF, DIM)
        t(f"blk.{i}.ffn_down.weight", DIM, FF)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny_gguf.py OUT.gguf")
    main(sys.argv[1])
