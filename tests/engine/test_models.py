"""Broken model files are refused with a clear message and never reach llama.cpp."""
import os
import subprocess

import pytest

from lsp_server.engine import EngineConfig, LocalEngine, ModelFileError, registry
from lsp_server.engine.gguf import read_gguf

from conftest import ROOT, tandem_cmd

DRAFT = registry.default_path(registry.DEFAULT_DRAFT)
TARGET = registry.default_path(registry.DEFAULT_TARGET)


def truncated_copy(src, dst, keep_bytes):
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.write(f.read(keep_bytes))
    return dst


@pytest.mark.models
def test_default_models_are_whole_and_verified():
    for spec in registry.DEFAULTS:
        registry.verify_model_file(registry.default_path(spec), spec)


@pytest.mark.models
def test_truncated_file_is_rejected(tmp_path):
    bad = truncated_copy(DRAFT, tmp_path / "draft.gguf", 50_000_000)
    with pytest.raises(ModelFileError, match="truncated model file"):
        read_gguf(str(bad))
    with pytest.raises(ModelFileError, match="truncated"):
        LocalEngine(EngineConfig(target_path=str(bad), draft_path="none", stats_path="", calibration_path=""))


@pytest.mark.models
def test_file_cut_inside_the_header_is_rejected(tmp_path):
    bad = truncated_copy(DRAFT, tmp_path / "draft.gguf", 100_000)
    with pytest.raises(ModelFileError, match="truncated GGUF header"):
        read_gguf(str(bad))


def test_not_a_gguf_file(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"PK\x03\x04" + os.urandom(4096))
    with pytest.raises(ModelFileError, match="not a GGUF"):
        registry.verify_model_file(bad)


def test_wrong_checksum_is_rejected(tmp_path):
    spec = registry.DEFAULT_DRAFT
    bad = tmp_path / spec.filename
    with open(bad, "wb") as f:     # right size, wrong bytes (sparse: cheap to make)
        f.truncate(spec.size)
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        registry.verify_model_file(bad, spec)


@pytest.mark.models
def test_wrong_size_for_a_known_model_is_rejected(tmp_path):
    spec = registry.DEFAULT_TARGET
    bad = truncated_copy(DRAFT, tmp_path / spec.filename, 1_000_000)
    with pytest.raises(ModelFileError, match="wrong size"):
        registry.verify_model_file(bad, spec)


@pytest.mark.models
def test_cached_default_model_modified_after_verification_is_rehashed(tmp_path, monkeypatch):
    monkeypatch.setenv("TANDEM_CACHE_DIR", str(tmp_path))
    spec = registry.DEFAULT_DRAFT
    path = registry.default_path(spec)
    path.parent.mkdir(parents=True)
    os.link(DRAFT, path) if os.stat(DRAFT).st_dev == os.stat(tmp_path).st_dev else \
        truncated_copy(DRAFT, path, spec.size)
    registry.verify_model_file(path)            # verified and stamped
    assert path.with_name(path.name + ".verified").exists()
    registry.verify_model_file(path)            # served from the stamp
    other = tmp_path / "other.gguf"
    with open(other, "wb") as f:
        f.truncate(spec.size)
    os.replace(other, path)                     # same size, other content, new mtime
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        registry.verify_model_file(path)


@pytest.mark.models
def test_broken_or_missing_draft_means_target_only(tmp_path):
    bad = truncated_copy(DRAFT, tmp_path / "draft.gguf", 50_000_000)
    for draft in (str(bad), str(tmp_path / "missing.gguf")):
        e = LocalEngine(EngineConfig(draft_path=draft, stats_path=""))
        try:
            assert e.draft is None
            assert any("running target-only" in w for w in e.warnings)
            g = e.generate(__import__("lsp_server.engine", fromlist=["GenerationRequest"]).GenerationRequest(
                e.tokenize("def square(x):\n    return"), max_tokens=4))
            assert g.tokens
        finally:
            e.close()


@pytest.mark.models
def test_models_list_reports_state():
    out = subprocess.run(tandem_cmd() + ["models", "list"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0
    assert "target" in out.stdout and "sha256 verified" in out.stdout


@pytest.mark.models
def test_sidecar_checksum_for_a_model_of_your_own(tmp_path):
    import hashlib
    own = truncated_copy(DRAFT, tmp_path / "mine.gguf", 100_000)
    side = tmp_path / "mine.gguf.sha256"
    side.write_text("0" * 64 + "  mine.gguf\n")
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        registry.verify_model_file(own)
    side.write_text(hashlib.sha256(own.read_bytes()).hexdigest() + "  mine.gguf\n")
    with pytest.raises(ModelFileError, match="truncated"):   # right checksum, but still a cut file
        registry.verify_model_file(own)


def test_default_pair_vocabularies_are_compatible(engine):
    from lsp_server.engine.vocab import incompatibility
    assert engine.draft is not None
    assert incompatibility(engine.target, engine.draft) is None


@pytest.mark.models
def test_gpu_layers_on_a_cpu_build_are_reported():
    import llama_cpp
    e = LocalEngine(EngineConfig(draft_path="none", n_gpu_layers=99, stats_path=""))
    try:
        if llama_cpp.llama_supports_gpu_offload():
            assert not any("no GPU support" in w for w in e.warnings)
        else:
            assert any("no GPU support" in w for w in e.warnings)
    finally:
        e.close()
