"""The GPU cost curve's tools, checked on this CPU (scripts/gpu-costs): the random-weight GGUF writer's shapes
match the real files' tensor lists, the trimmed llama.cpp sources build, and the random-weight files load,
generate and are measured by the cost tool."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts" / "gpu-costs"
sys.path.insert(0, str(SCRIPTS))
import random_gguf as rg  # noqa: E402

# the layers whose attn_v and ffn_down the default target (Q4_K_M, 28 layers) holds in Q6_K
TARGET_MORE_BITS = {0, 1, 5, 6, 7, 8, 9, 10, 13, 16, 19, 21, 24, 27}


def test_more_bits_rule_matches_the_default_target():
    assert rg.more_bits_layers(28) == TARGET_MORE_BITS
    assert len(rg.more_bits_layers(48)) == 48 // 8 + (48 - 7 * 48 // 8) + len(range(2, 36, 3))


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory):
    """The trimmed llama.cpp sources (gguf-py among them)."""
    dest = tmp_path_factory.mktemp("gpu-costs")
    subprocess.run(["bash", str(SCRIPTS / "trim.sh"), str(dest)], check=True, timeout=600)
    os.environ["GGUF_PY"] = str(dest / "llama.cpp" / "gguf-py")
    return dest / "llama.cpp"


@pytest.fixture(scope="module")
def real_paths(engine):
    return engine.target.path, engine.draft.path


def test_trimmed_sources_fit_a_device_call(trimmed):
    size = sum(f.stat().st_size for f in trimmed.rglob("*") if f.is_file())
    assert size < 40 * 2**20, size    # 64 MiB travel in all, the specs (about 3 MB) among them
    assert (trimmed / "ggml" / "src" / "ggml-cuda").is_dir() and not (trimmed / "models").exists()


def test_writer_shapes_match_the_real_files(trimmed, real_paths, tmp_path):
    target, draft = (rg.read_spec(p) for p in real_paths)
    # the rules that give 7B and 14B their tensors give the default target its own, in its order and types
    assert rg.derive(target, "1.5b")["tensors"] == target["tensors"]
    seven, fourteen = rg.derive(target, "7b"), rg.derive(target, "14b")
    # the published parameter counts of Qwen2.5(-Coder) 7B and 14B (untied output layer, as their GGUF files)
    assert rg.parameters(seven) == 7_615_616_512 and len(seven["tensors"]) == 3 + 28 * 12
    assert rg.parameters(fourteen) == 14_770_033_664 and len(fourteen["tensors"]) == 3 + 48 * 12
    tokens = next(v for k, _, _, v in seven["kv"] if k == "tokenizer.ggml.tokens")
    assert len(tokens) == 152064 and tokens[-1] == "[PAD152063]"
    # a random-weight copy of the draft: the real file's tensor list, metadata and size
    spec_file = tmp_path / "draft.json.gz"
    rg.save_spec(draft, str(spec_file))
    out = tmp_path / "draft-random.gguf"
    size = rg.write(rg.load_spec(str(spec_file)), str(out))
    again = rg.read_spec(str(out))
    assert again["tensors"] == draft["tensors"] and again["kv"] == draft["kv"]
    assert size == Path(real_paths[1]).stat().st_size


def test_trimmed_sources_build_and_measure_a_random_model(trimmed, real_paths, tmp_path):
    env = dict(os.environ, GPU_COSTS_CUDA="0")    # this machine has no GPU: the CPU backend
    tool = subprocess.run(["bash", str(SCRIPTS / "build.sh"), str(trimmed), str(tmp_path / "build")], env=env,
                          check=True, capture_output=True, text=True, timeout=1800).stdout.strip()
    model = tmp_path / "draft-random.gguf"
    rg.write(rg.read_spec(real_paths[1]), str(model))
    r = subprocess.run([tool, str(model), "--depth", "32", "--max-n", "3", "--reps", "2", "--threads", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    costs = json.loads(r.stdout)
    assert sorted(costs["batch_s"]) == ["1", "2", "3"] and all(v > 0 for v in costs["batch_s"].values())
    # a cost file from it, as run.sh makes one on a GPU, loads as a projection's curve
    target_json, out = tmp_path / "t.json", tmp_path / "costs.json"
    target_json.write_text(r.stdout)
    subprocess.run([sys.executable, str(SCRIPTS / "cost_file.py"), str(target_json), str(target_json), str(out),
                    "--name", "cpu-check"], check=True, timeout=120)
    from lsp_server.bench.projection import CostCurve
    curve = CostCurve.load(str(out))
    assert curve.target_s[1] == costs["batch_s"]["1"] and curve.host_row_s > 0
    # the random-weight file loads in the engine's own bindings and generates
    from lsp_server.engine.llama import LlamaModel, top2
    m = LlamaModel(str(model), n_ctx=256, n_threads=2)
    try:
        m.prefill(m.tokenize("def add(a, b):\n"))
        out_tokens = []
        for _ in range(4):
            tok, _ = top2(m.logits(-1))
            out_tokens.append(tok)
            m.decode([tok])
        assert len(out_tokens) == 4 and all(0 <= t < m.n_vocab for t in out_tokens)
    finally:
        m.close()
