"""A tiny llama-architecture GGUF model, written here with the ``gguf`` package.

Random weights (seeded: the same file every time), one layer, 32-wide, and a
SentencePiece-style vocabulary of the three special tokens, the printable ASCII
characters and the 256 byte-fallback tokens, so llama.cpp can tokenize any text (only the
printable ones can be sampled). It knows
nothing; the server's JSON-schema grammar is what makes its answers well formed. Nothing
is downloaded: the tests write it to a temporary folder.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_tiny_model"]

EMBED = 32
HEADS = 2
FFN = 64
CONTEXT = 16384


def _vocab() -> tuple[list[str], list[float], list[int]]:
    import gguf

    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for code in range(32, 127):
        tokens.append("\u2581" if code == 32 else chr(code))  # SentencePiece's space
        types.append(gguf.TokenType.NORMAL)
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>")
        # Only printable ASCII may be sampled: llama.cpp's grammar never picks a token
        # that renders empty (a control token), so the answers stay printable JSON while
        # any prompt still tokenizes through the byte fallback.
        printable = 0x20 <= byte < 0x7F
        types.append(gguf.TokenType.BYTE if printable else gguf.TokenType.CONTROL)
    scores = [0.0] * len(tokens)
    return tokens, scores, [int(t) for t in types]


def write_tiny_model(path: Path, *, seed: int = 23) -> Path:
    """Write the model to ``path`` (a ``.gguf`` file) and return it."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab()
    vocab = len(tokens)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("claimfsm-tiny-test")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(1)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(EMBED // HEADS)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)

    def tensor(name: str, *shape: int, ones: bool = False) -> None:
        data = (np.ones(shape) if ones else rng.normal(0, 0.2, shape)).astype(np.float32)
        writer.add_tensor(name, data)

    tensor("token_embd.weight", vocab, EMBED)
    tensor("output_norm.weight", EMBED, ones=True)
    tensor("output.weight", vocab, EMBED)
    tensor("blk.0.attn_norm.weight", EMBED, ones=True)
    tensor("blk.0.attn_q.weight", EMBED, EMBED)
    tensor("blk.0.attn_k.weight", EMBED, EMBED)
    tensor("blk.0.attn_v.weight", EMBED, EMBED)
    tensor("blk.0.attn_output.weight", EMBED, EMBED)
    tensor("blk.0.ffn_norm.weight", EMBED, ones=True)
    tensor("blk.0.ffn_gate.weight", FFN, EMBED)
    tensor("blk.0.ffn_up.weight", FFN, EMBED)
    tensor("blk.0.ffn_down.weight", EMBED, FFN)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
