"""The GPU cost curve's tools, checked on this CPU (scripts/gpu-costs): the random-weight GGUF writer's shapes
match the real files' tensor lists, the trimmed llama.cpp sources build, and the random-weight files load,
generate and are measured by the cost tool."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
    """The default models' files (the engine fixture makes sure they are here and whole)."""
    return engine.target.path, engine.draft.path


@pytest.mark.models   # the sources come with the models' tier (make test): make check fetches nothing
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


def test_run_script_end_to_end_on_this_cpu(real_paths, tmp_path):
    """What the GPU machine runs, here on the CPU backend: pack (trimmed sources, specs), build, random-weight
    files, measurements, a cost file that the projection loads; then the random draft loads and generates."""
    pack, out, work = tmp_path / "pack", tmp_path / "out", tmp_path / "work"
    env = dict(os.environ, PYTHON=sys.executable)
    subprocess.run(["bash", str(SCRIPTS / "pack.sh"), str(pack)], env=env, check=True, timeout=900)
    env.update(GPU_COSTS_CUDA="0", SIZES="1.5b", REPS="2", DEPTH="48", WORK=str(work))
    r = subprocess.run(["bash", str(SCRIPTS / "run.sh"), str(pack), str(out)], env=env, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    from evals.speed.projection import CostCurve
    curve = CostCurve.load(str(out / "costs-qwen2.5-coder-1.5b.json"))
    assert sorted(curve.target_s) == list(range(1, 18)) and all(v > 0 for v in curve.target_s.values())
    assert sorted(curve.draft_batch_s) == list(range(1, 17)) and curve.draft_token_s == curve.draft_batch_s[1]
    assert curve.depth == 48 and curve.host_row_s > 0 and "CPU only" in curve.machine
    assert not (work / "target-1.5b.gguf").exists()      # each target's file goes once it is measured
    # the random-weight draft loads in the engine's own bindings and generates
    from lsp_server.engine.llama import LlamaModel, top2
    m = LlamaModel(str(work / "draft-0.5b.gguf"), n_ctx=256, n_threads=2)
    try:
        m.prefill(m.tokenize("def add(a, b):\n"))
        tokens = []
        for _ in range(4):
            tok, _ = top2(m.logits(-1))
            tokens.append(tok)
            m.decode([tok])
        assert len(tokens) == 4 and all(0 <= t < m.n_vocab for t in tokens)
    finally:
        m.close()
