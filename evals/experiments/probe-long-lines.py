"""Large and long-lined files through the real server over stdio: a 1.5 MB Python file asked at its top (twice),
and a minified bundle (one line of 2.3 MB) asked after it, at its end and before it. Prints each request's time,
error and answer.

    .venv/bin/python scripts/probe-long-lines.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from rawlsp import RawServer  # noqa: E402


def main() -> None:
    s = RawServer()
    s.initialize({}, root=None)
    print("ready", s.wait_ready()["ready"], flush=True)

    def ask(uri: str, line: int, ch: int, label: str) -> None:
        t = time.monotonic()
        r = s.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {
            "line": line, "character": ch}, "context": {"triggerKind": 2}}, timeout=300)
        res = r.get("result")
        items = res.get("items") if isinstance(res, dict) else res
        print(f"{label}: {time.monotonic() - t:.2f} s, error {r.get('error')}, "
              f"answer {(items[0]['insertText'] if items else None)!r:.60}", flush=True)

    long_py = "def top(x):\n    \n\n" + "".join(f"def fn_{i}(x):\n    return x + {i}\n\n" for i in range(40_000))
    s.open("file:///probe/long.py", long_py)
    ask("file:///probe/long.py", 1, 4, "1.5 MB Python file, at its top")
    ask("file:///probe/long.py", 1, 4, "the same again")
    bundle = "".join(f"var f{i}=function(a,b){{return a*{i}+b}};" for i in range(60_000))
    s.open("file:///probe/after.min.js", bundle + "\n", "javascript")
    ask("file:///probe/after.min.js", 1, 0, "after a 2.3 MB line")
    ask("file:///probe/after.min.js", 0, len(bundle), "at its end")
    s.open("file:///probe/before.min.js", "\n" + bundle, "javascript")
    ask("file:///probe/before.min.js", 0, 0, "before it")
    print("server alive:", s.alive())
    s.close()


if __name__ == "__main__":
    main()
