"""Random-weight GGUF files with the exact tensor shapes and types of real models, for measuring speed where the
real weights cannot travel (a GPU machine that reaches nothing): a decode's speed does not depend on the values.

  random_gguf.py spec REAL.gguf SPEC.json.gz     the real file's metadata (tokenizer included) and tensor list
  random_gguf.py write SPEC.json.gz OUT.gguf [--like 7b|14b]
                                                 a file of that spec filled with random values; --like: the
                                                 shapes of Qwen2.5-Coder 7B or 14B (their published configs) in
                                                 the spec's quantization mix (Q4_K_M's rule for which layers get
                                                 more bits), the spec's tokenizer padded to their vocabulary

gguf-py comes from llama.cpp's sources (GGUF_PY=path/to/gguf-py, default: beside this script's trimmed copy).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

# config.json of Qwen/Qwen2.5-Coder-{0.5B,1.5B,7B,14B}-Instruct (hidden_size, intermediate_size, num_hidden_layers,
# num_attention_heads, num_key_value_heads, vocab_size)
QWEN25_CODER = {
    "0.5b": dict(hidden=896, ffn=4864, layers=24, heads=14, kv_heads=2, vocab=151936),
    "1.5b": dict(hidden=1536, ffn=8960, layers=28, heads=12, kv_heads=2, vocab=151936),
    "7b": dict(hidden=3584, ffn=18944, layers=28, heads=28, kv_heads=4, vocab=152064),
    "14b": dict(hidden=5120, ffn=13824, layers=48, heads=40, kv_heads=8, vocab=152064),
}
# where a block's f16 scales sit (byte offsets), so that random bytes decode to finite, small weights
F16_SCALES = {"Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,), "Q2_K": (80, 82),
              "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}
# the per-layer tensors that Q4_K_M gives more bits in some layers (llama.cpp's llama-quant.cpp)
MORE_BITS_ROLES = ("attn_v.weight", "ffn_down.weight")
_BLOCK = re.compile(r"blk\.(\d+)\.(.+)")


def _gguf():
    path = os.environ.get("GGUF_PY") or str(Path(__file__).resolve().parent / "llama.cpp" / "gguf-py")
    if Path(path).is_dir() and path not in sys.path:
        sys.path.insert(0, path)
    import gguf
    return gguf


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's rule for the layers that Q4_K_M / Q5_K_M quantize with more bits: i counts the tensors of a
    role in the order the quantizer meets them."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def more_bits_layers(n: int) -> set[int]:
    """The layers that get more bits: the quantizer meets them in the order of their names as strings
    (blk.0, blk.1, blk.10, ..., blk.19, blk.2, ...), the order of the converted file it reads."""
    return {layer for i, layer in enumerate(sorted(range(n), key=str)) if use_more_bits(i, n)}


def read_spec(real: str) -> dict:
    """The metadata (every key with its type) and the tensor list (name, shape as GGUF's ne, type) of a file."""
    gguf = _gguf()
    r = gguf.GGUFReader(real)
    kv = []
    for key, f in r.fields.items():
        if key.startswith("GGUF."):
            continue
        vtype = f.types[0]
        sub = f.types[1] if vtype == gguf.GGUFValueType.ARRAY and len(f.types) > 1 else None
        kv.append([key, vtype.name, sub.name if sub else None, f.contents()])
    tensors = [[t.name, [int(x) for x in t.shape], t.tensor_type.name] for t in r.tensors]
    return {"source": Path(real).name, "kv": kv, "tensors": tensors}


def save_spec(spec: dict, path: str) -> None:
    with gzip.open(path, "wt") as f:
        json.dump(spec, f)


def load_spec(path: str) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def derive(spec: dict, size: str) -> dict:
    """The spec of a Qwen2.5-Coder of another size: its published shapes, the spec's types by role (the layers
    that get more bits chosen by Q4_K_M's rule for its own depth), the spec's tokenizer padded to its vocabulary
    as llama.cpp's converter pads it."""
    c = QWEN25_CODER[size]
    head_dim = c["hidden"] // c["heads"]
    kv_dim = head_dim * c["kv_heads"]
    n_old = next(v for k, _, _, v in spec["kv"] if k.endswith(".block_count"))
    old_more, new_more = more_bits_layers(n_old), more_bits_layers(c["layers"])
    # each block role's type in a layer with more bits and in one without, as the spec has them
    types: dict[str, dict[bool, str]] = {}
    for name, _, t in spec["tensors"]:
        m = _BLOCK.fullmatch(name)
        if m:
            more = int(m.group(1)) in old_more and m.group(2) in MORE_BITS_ROLES
            if types.setdefault(m.group(2), {}).setdefault(more, t) != t:
                raise ValueError(f"{spec['source']}: the types of its {m.group(2)} tensors do not follow "
                                 f"Q4_K_M's rule; derive from a Q4_K_M file")
    shapes = {"attn_norm.weight": [c["hidden"]], "ffn_norm.weight": [c["hidden"]],
              "attn_q.weight": [c["hidden"], c["hidden"]], "attn_q.bias": [c["hidden"]],
              "attn_k.weight": [c["hidden"], kv_dim], "attn_k.bias": [kv_dim],
              "attn_v.weight": [c["hidden"], kv_dim], "attn_v.bias": [kv_dim],
              "attn_output.weight": [c["hidden"], c["hidden"]],
              "ffn_gate.weight": [c["hidden"], c["ffn"]], "ffn_up.weight": [c["hidden"], c["ffn"]],
              "ffn_down.weight": [c["ffn"], c["hidden"]],
              "token_embd.weight": [c["hidden"], c["vocab"]], "output.weight": [c["hidden"], c["vocab"]],
              "output_norm.weight": [c["hidden"]]}
    roles = [m.group(2) for name, _, _ in spec["tensors"] if (m := _BLOCK.fullmatch(name)) and m.group(1) == "0"]
    first = next(i for i, (name, _, _) in enumerate(spec["tensors"]) if _BLOCK.fullmatch(name))
    pre = [t for t in spec["tensors"][:first] if not _BLOCK.fullmatch(t[0])]
    post = [t for t in spec["tensors"][first:] if not _BLOCK.fullmatch(t[0])]
    tensors = [[name, shapes[name], t] for name, _, t in pre]
    for i in sorted(range(c["layers"]), key=str):   # the blocks in the order of their names, as the spec has them
        for role in roles:
            more = i in new_more and role in MORE_BITS_ROLES
            tensors.append([f"blk.{i}.{role}", shapes[role], types[role].get(more, types[role][False])])
    tensors += [[name, shapes[name], t] for name, _, t in post]

    arch = next(v for k, _, _, v in spec["kv"] if k == "general.architecture")
    set_to = {f"{arch}.block_count": c["layers"], f"{arch}.embedding_length": c["hidden"],
              f"{arch}.feed_forward_length": c["ffn"], f"{arch}.attention.head_count": c["heads"],
              f"{arch}.attention.head_count_kv": c["kv_heads"], "general.size_label": size.upper(),
              "general.name": f"random weights, shapes of Qwen2.5-Coder {size.upper()} Instruct"}
    kv = []
    for key, vtype, sub, val in spec["kv"]:
        if key in set_to:
            val = set_to[key]
        elif key == "tokenizer.ggml.tokens":
            val = list(val) + [f"[PAD{i}]" for i in range(len(val), c["vocab"])]
        elif key == "tokenizer.ggml.token_type":
            val = list(val) + [5] * (c["vocab"] - len(val))   # UNUSED, as the converter marks padding
        kv.append([key, vtype, sub, val])
    return {"source": f"{spec['source']} -> Qwen2.5-Coder {size.upper()}", "kv": kv, "tensors": tensors}


def nbytes(shape: list[int], type_name: str) -> int:
    gguf = _gguf()
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[type_name]]
    n = int(np.prod(shape))
    if n % block:
        raise ValueError(f"{n} elements do not fill whole {type_name} blocks of {block}")
    return n // block * size


def parameters(spec: dict) -> int:
    return sum(int(np.prod(shape)) for _, shape, _ in spec["tensors"])


def _values(name: str, shape: list[int], type_name: str, rng: np.random.Generator) -> np.ndarray:
    n = nbytes(shape, type_name)
    if type_name in ("F32", "F16"):
        dt = np.float32 if type_name == "F32" else np.float16
        count = int(np.prod(shape))
        vals = np.ones(count, dt) if name.endswith("norm.weight") else (rng.standard_normal(count) * 0.02).astype(dt)
        return vals.view(np.uint8)
    if type_name not in F16_SCALES:
        raise ValueError(f"{name}: the writer does not know where {type_name} keeps its scales")
    data = np.frombuffer(rng.bytes(n), np.uint8).copy()
    gguf = _gguf()
    block_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[type_name]][1]
    blocks = data.reshape(-1, block_bytes)
    scales = rng.uniform(0.001, 0.01, size=(blocks.shape[0], 1)).astype(np.float16).view(np.uint8)
    for off in F16_SCALES[type_name]:
        blocks[:, off:off + 2] = scales
    return data


def write(spec: dict, out: str, seed: int = 0, log=lambda s: None) -> int:
    """A GGUF file of the spec with random values; returns its size in bytes."""
    gguf = _gguf()
    kv = {k: (vt, sub, v) for k, vt, sub, v in spec["kv"]}
    arch = kv["general.architecture"][2]
    w = gguf.GGUFWriter(out, arch)
    for key, (vtype, sub, val) in kv.items():
        if key == "general.architecture":
            continue
        w.add_key_value(key, val, gguf.GGUFValueType[vtype], gguf.GGUFValueType[sub] if sub else None)
    for name, shape, t in spec["tensors"]:
        # the writer takes numpy's order (the reverse of GGUF's ne) and writes it back as ne
        w.add_tensor_info(name, list(reversed(shape)), np.dtype(np.float32), nbytes(shape, t),
                          raw_dtype=gguf.GGMLQuantizationType[t])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for i, (name, shape, t) in enumerate(spec["tensors"]):
        w.write_tensor_data(_values(name, shape, t, rng))
        if i % 50 == 0:
            log(f"  {i}/{len(spec['tensors'])} tensors")
    w.close()
    return Path(out).stat().st_size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("spec")
    s.add_argument("real")
    s.add_argument("out")
    w = sub.add_parser("write")
    w.add_argument("spec")
    w.add_argument("out")
    w.add_argument("--like", choices=sorted(QWEN25_CODER))
    w.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.cmd == "spec":
        spec = read_spec(a.real)
        save_spec(spec, a.out)
        print(f"{a.out}: {len(spec['kv'])} keys, {len(spec['tensors'])} tensors of {a.real}", file=sys.stderr)
        return 0
    spec = load_spec(a.spec)
    if a.like:
        spec = derive(spec, a.like)
    size = write(spec, a.out, a.seed, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"{a.out}: {size / 1e9:.2f} GB, {len(spec['tensors'])} tensors, {parameters(spec) / 1e9:.2f}B parameters "
          f"({spec['source']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
