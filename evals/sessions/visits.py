"""`tandem-eval visits`: a working session on real-size files from real projects, against `tandem serve` over stdio,
as an editor drives it. The user opens a file, goes to a spot, empties a code line to its indentation, pauses
(PAUSE_S) and asks for an inline completion; reads the answer, puts the line back and moves on: far inside the
file (jump), a few lines away (near), to another file opened before (switch), back to a spot visited before
(return), or types a few lines again character by character (typing, as `tandem-eval replay` does: a request after
every key, waiting for ghost text at pauses). Reported per kind of visit: latency p50/p95, prompt tokens
evaluated and restored from the KV store per request, fast answers, and the answer's first line against the
real line; for the session, RSS and the KV bytes held.

The files and visits are in fixtures/real/visits.json (README there: where each file comes from, its licence)."""
from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.service.stats import percentile
from lsp_server.bench.fixtures import find_fixture
from evals.sessions.replay import (Counts, Replayer, Typist, engine_running_note, engine_was_running, peak_rss_mb, position,
                     replace_range, running_server, server_command, server_stats)

THINK_S = 1.0     # finding the spot after a jump, a switch or an open, before editing
PAUSE_S = 1.0     # after emptying the line, before asking (the measurement)
READ_S = 1.0      # reading the answer
ANSWER_TIMEOUT_S = 60.0
KINDS = ("open", "jump", "near", "switch", "return", "typing")
TARGETS = {"p50_ms": 1000, "p95_ms": 2000, "open_ms": 3000, "typing_p95_ms": 2000, "rss_mb": 2384}


@dataclass
class Visit:
    kind: str
    file: str          # a key of the files table
    line: int          # 1-based: the line emptied, or the first line typed again
    lines: int = 1     # typing: how many lines are typed again


@dataclass
class Outcome:
    visit: Visit
    latencies_ms: list[float] = field(default_factory=list)
    answer: str = ""
    expected: str = ""
    exact: bool | None = None
    records: list[dict] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)


def default_visits() -> Path:
    return find_fixture("real/visits.json", "--visits")


def load_visits(path: Path) -> tuple[dict[str, tuple[Path, str]], list[Visit]]:
    spec = json.loads(path.read_text())
    files = {k: (path.parent / f["path"], f["language"]) for k, f in spec["files"].items()}
    visits = [Visit(**v) for v in spec["visits"]]
    for v in visits:
        if v.kind not in KINDS:
            raise ValueError(f"{path}: unknown kind of visit {v.kind!r} (known: {', '.join(KINDS)})")
        if v.file not in files:
            raise ValueError(f"{path}: visit to an unknown file {v.file!r}")
        lines = files[v.file][0].read_text(encoding="utf-8").split("\n")
        if not 1 <= v.line <= len(lines) - v.lines + 1 or not lines[v.line - 1].strip():
            raise ValueError(f"{path}: {v.file} line {v.line} is not a line with code")
    return files, visits


def first_line(text: str) -> str:
    return next((l.strip() for l in text.split("\n") if l.strip()), "")


class Visitor:
    def __init__(self, client, files: dict[str, tuple[Path, str]], log, think_s: float = THINK_S,
                 read_s: float = READ_S, cursor: bool = True):
        self.client, self.files, self.log = client, files, log
        self.think_s, self.read_s = think_s, read_s
        self.cursor = cursor   # report cursor moves (tandem/didMoveCursor), as Tandem's own editor clients do
        self.counts = Counts()
        self.replayer = Replayer(client, self.counts, 1.0, log)
        self.open: dict[str, tuple[str, int, str]] = {}   # key -> (uri, version, text)
        self.seed = 0

    async def _records(self) -> list[dict]:
        return (await server_stats(self.client, records=True)).get("records", [])

    def _edit(self, key: str, start: int, end: int, new: str) -> None:
        uri, version, text = self.open[key]
        self.open[key] = (uri, version + 1, replace_range(self.client, uri, version + 1, text, start, end, new))

    async def visit(self, v: Visit) -> Outcome:
        path, language = self.files[v.file]
        if v.file not in self.open:
            text = path.read_text(encoding="utf-8")
            uri = path.resolve().as_uri()
            self.client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
            self.open[v.file] = (uri, 1, text)
        uri, _, text = self.open[v.file]
        lines = text.split("\n")
        start = sum(len(l) + 1 for l in lines[:v.line - 1])
        if self.cursor:   # the cursor lands at the end of the line the user is about to rewrite
            self.client.protocol.notify("tandem/didMoveCursor", {
                "uri": uri, "position": {"line": v.line - 1, "character": position(text, start + len(
                    lines[v.line - 1])).character}})
        await asyncio.sleep(self.think_s)
        before = len(await self._records())
        out = Outcome(v)
        if v.kind == "typing":
            stretch = "".join(l + "\n" for l in lines[v.line - 1:v.line - 1 + v.lines])
            indent = stretch[:len(stretch) - len(stretch.lstrip(" \t"))]
            # the lines removed (their first line's indentation left), then typed again after the pause
            self._edit(v.file, start + len(indent), start + len(stretch) - 1, "")
            await asyncio.sleep(PAUSE_S)
            counts = self.replayer.c = Counts()
            self.seed += 1
            uri, version, text = self.open[v.file]
            version, text = await self.replayer.type_stretch(uri, version, text, start + len(indent),
                                                           stretch[len(indent):-1], Typist(self.seed, 1.0))
            self.open[v.file] = (uri, version, text)
            out.latencies_ms = list(counts.pause_latency_ms)
        else:
            line = lines[v.line - 1]
            indent = line[:len(line) - len(line.lstrip(" \t"))]
            out.expected = line.strip()
            self._edit(v.file, start + len(indent), start + len(line), "")
            await asyncio.sleep(PAUSE_S)
            uri, _, text = self.open[v.file]
            pending = await self.replayer.request(uri, text, start + len(indent))
            fut, msg_id, sent = pending
            try:
                await asyncio.wait_for(asyncio.shield(fut), ANSWER_TIMEOUT_S)
            except (asyncio.TimeoutError, JsonRpcException):
                pass
            if not fut.done():
                self.replayer.cancel(fut, msg_id)
            got = self.replayer.result(fut, sent, at_pause=True) if fut.done() else None
            out.answer = got[0] if got else ""
            out.latencies_ms = list(self.replayer.c.pause_latency_ms[-1:]) if got else [ANSWER_TIMEOUT_S * 1000]
            out.exact = first_line(out.answer) == out.expected
            await asyncio.sleep(self.read_s)
            self._edit(v.file, start + len(indent), start + len(indent), line[len(indent):])
        recs = (await self._records())[before:]
        out.records = [r for r in recs if r.get("source") in ("model", "fast", "reuse", "cache")]
        # where the page prompts' prefixes started (a fast prompt's start follows the cursor: not a page)
        out.pages = [r["page"] for r in out.records if r.get("source") == "model" and "page" in r]
        return out


def summarize(outcomes: list[Outcome]) -> dict:
    by: dict[str, dict] = {}
    for kind in KINDS:
        got = [o for o in outcomes if o.visit.kind == kind]
        if not got:
            continue
        lat = [ms for o in got for ms in o.latencies_ms]
        recs = [r for o in got for r in o.records if r.get("source") in ("model", "fast")]
        exact = [o.exact for o in got if o.exact is not None]
        window_moves = sum(len({p for p in o.pages}) - 1 for o in got if o.pages)
        sources: dict[str, int] = {}
        for o in got:
            if o.visit.kind != "typing" and o.records:
                sources[o.records[-1]["source"]] = sources.get(o.records[-1]["source"], 0) + 1
        by[kind] = {
            "visits": len(got), "answers": len(lat),
            "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95), "max_ms": max(lat, default=None),
            "evaluated_median": statistics.median([r["prompt_evaluated"] for r in recs]) if recs else None,
            "prompt_median": statistics.median([r["prompt_tokens"] for r in recs]) if recs else None,
            "restored_requests": sum(1 for r in recs if r.get("prompt_restored", 0) > 0),
            "model_requests": len(recs),
            "fast_answers": sum(1 for r in recs if r.get("source") == "fast"),
            "exact": sum(exact), "exact_of": len(exact),
            "window_moves": window_moves if kind == "typing" else None,
            "answered_by": sources,
        }
    return by


async def run_visits(files, visits: list[Visit], server_cmd: list[str], options: dict | None, log,
                     think_s: float = THINK_S, read_s: float = READ_S, cursor: bool = True) -> dict:
    t0 = time.perf_counter()
    outcomes: list[Outcome] = []
    kv_peak = 0
    async with running_server(server_cmd, options, log) as client:
        visitor = Visitor(client, files, log, think_s, read_s, cursor)
        for i, v in enumerate(visits, 1):
            o = await visitor.visit(v)
            outcomes.append(o)
            st = await server_stats(client)
            kv = (st.get("memory", {}).get("kv_store") or {}).get("bytes", 0)
            kv_peak = max(kv_peak, kv)
            lat = ", ".join(f"{ms:,.0f}" for ms in o.latencies_ms[:6]) + (" ..." if len(o.latencies_ms) > 6 else "")
            log(f"  {i:2d}. {v.kind:7s} {v.file}:{v.line:<5d} {lat} ms"
                + (f"  {'exact' if o.exact else 'other'}: {first_line(o.answer)[:60]!r}" if o.exact is not None
                   else f"  pages {sorted(set(o.pages))}"))
        final = await server_stats(client)
        peak = peak_rss_mb(client._server.pid, final)
        was_running = engine_was_running(client._server.pid, final)
    mem = final.get("memory", {})
    return {
        "seconds": round(time.perf_counter() - t0, 1), "by_kind": summarize(outcomes),
        "peak_rss_mb": round(peak, 1) if peak else None, "rss_mib_end": mem.get("rss_mib"),
        "engine_was_running": was_running,
        "kv_store": mem.get("kv_store"), "kv_bytes_peak": kv_peak, "draft_model": final.get("draft_model"),
        "fill": final.get("fill"), "targets": TARGETS,
        "pacing_s": {"think": think_s, "pause": PAUSE_S, "read": read_s}, "cursor_moves_reported": cursor,
        "visits": [{"kind": o.visit.kind, "file": o.visit.file, "line": o.visit.line, "latencies_ms":
                    [round(x, 1) for x in o.latencies_ms], "expected": o.expected, "answer": o.answer,
                    "exact": o.exact, "pages": o.pages,
                    "records": [{k: r.get(k) for k in ("source", "latency_s", "prompt_tokens", "prompt_evaluated",
                                                       "prompt_restored", "page", "queue_s", "prompt_s", "gen_s")}
                                for r in o.records]} for o in outcomes],
    }


def print_report(r: dict, out=sys.stdout) -> None:
    def ms(v):
        return "-" if v is None else f"{v:,.0f}"

    pace = r.get("pacing_s") or {}
    print(f"visits: {sum(k['visits'] for k in r['by_kind'].values())} visits in {r['seconds']:.0f}s "
          f"(before each edit {pace.get('think', '-')} s, before each request {pace.get('pause', '-')} s, "
          f"reading each answer {pace.get('read', '-')} s; cursor moves "
          f"{'reported' if r.get('cursor_moves_reported') else 'not reported'})", file=out)
    print(f"{'kind':8s} {'visits':>6s} {'answers':>7s} {'p50 ms':>7s} {'p95 ms':>7s} {'max ms':>7s} "
          f"{'evaluated':>9s} {'of prompt':>9s} {'restored':>8s} {'fast':>5s} {'first line exact':>16s}", file=out)
    for kind, k in r["by_kind"].items():
        exact = f"{k['exact']}/{k['exact_of']}" if k["exact_of"] else (
            f"{k['window_moves']} window moves" if k["window_moves"] is not None else "-")
        print(f"{kind:8s} {k['visits']:6d} {k['answers']:7d} {ms(k['p50_ms']):>7s} {ms(k['p95_ms']):>7s} "
              f"{ms(k['max_ms']):>7s} {ms(k['evaluated_median']):>9s} {ms(k['prompt_median']):>9s} "
              f"{k['restored_requests']:>3d}/{k['model_requests']:<4d} {k['fast_answers']:5d} {exact:>16s}",
              file=out)
    kv = r.get("kv_store") or {}
    t = kv.get("target") or {}
    running = engine_running_note(r.get("engine_was_running", False))
    print(f"peak RSS {ms(r['peak_rss_mb'])} MB{running} (target <= {TARGETS['rss_mb']:,}); KV store: "
          f"{(kv.get('bytes') or 0) / 2**20:,.0f} MiB held at the end, peak {r['kv_bytes_peak'] / 2**20:,.0f} MiB, "
          f"budget {(kv.get('budget_bytes') or 0) / 2**20:,.0f} MiB; {t.get('entries', 0)} states, "
          f"{t.get('restores', 0)} restores, {t.get('saves', 0)} saves, {t.get('evictions', 0)} evictions", file=out)
    if r.get("draft_model"):
        print(f"draft model: {r['draft_model']['decision']}", file=out)
    if r.get("fill"):
        print(f"filled ahead: {r['fill']['tokens']} tokens in {r['fill']['runs']} runs "
              f"({r['fill']['preempted']} pre-empted)", file=out)


def cli(args) -> dict:
    files, visits = load_visits(Path(args.visits) if args.visits else default_visits())
    if args.limit:
        visits = visits[:args.limit]
    cmd = server_command(args)
    options = json.loads(args.options) if args.options else {}
    result = asyncio.run(run_visits(files, visits, cmd, options, log=lambda m: print(m, file=sys.stderr),
                                    think_s=args.think, read_s=args.read, cursor=not args.no_cursor))
    print_report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return result
