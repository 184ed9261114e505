"""Typing through a suggestion in a small file, a 450 kB one and a 4 MB one, through the real server over stdio:
each keystroke's request is answered from the typing cache, so what it costs is the server's own work on the
document.

    .venv/bin/python scripts/probe-large-file-typing.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from rawlsp import RawServer  # noqa: E402


def inline(s: RawServer, uri: str, line: int, character: int) -> str:
    r = s.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {
        "line": line, "character": character}, "context": {"triggerKind": 2}}, timeout=300)
    res = r.get("result")
    items = res.get("items") if isinstance(res, dict) else res
    return items[0]["insertText"] if items else ""


def main() -> None:
    s = RawServer()
    s.initialize({}, root=None)
    print("ready", s.wait_ready()["ready"], flush=True)
    for name, n in (("small", 50), ("medium", 10_000), ("big", 80_000)):
        lines = "".join(f"def helper_{i}(a, b):\n    return a * {i} + b\n\n" for i in range(n)).split("\n")
        mid = (n // 2) * 3
        lines.insert(mid, "def target(a, b):\n    ")
        text, uri = "\n".join(lines), f"file:///probe/{name}.py"
        s.open(uri, text)
        print(name, len(text), "bytes", flush=True)
        for label in ("first", "again (cache)"):
            t = time.monotonic()
            got = inline(s, uri, mid + 1, 4)
            print(f"{name} {label}: {time.monotonic() - t:.2f}s text={got!r:.50}", flush=True)
        # the suggestion read before typing on: the generation behind it has ended (a keystroke that comes while
        # it runs waits for its next tokens, the model's time), so what a keystroke costs is the server's own work
        time.sleep(3)
        # type the suggestion's characters one by one: each request is answered from the typing cache
        times = []
        for k, ch in enumerate((got or "return a")[:8]):
            at = {"line": mid + 1, "character": 4 + k}
            s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2 + k},
                                                "contentChanges": [{"range": {"start": at, "end": at}, "text": ch}]})
            t = time.monotonic()
            inline(s, uri, mid + 1, 5 + k)
            times.append(time.monotonic() - t)
        print(name, "typing through, ms:", [round(x * 1000) for x in times], flush=True)
    s.close()


if __name__ == "__main__":
    main()
