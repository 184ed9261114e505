"""`tandem-eval replay --real N`: typing sessions in real projects' files, as a careful person types.

A function body of 3-12 lines is drawn (seeded) from a file of 100-3000 lines of a pinned project (`tandem-eval
real`'s corpus, the half asked for); the file is opened with the body removed and the cursor on its first line,
and the body is typed again key by key at a steady pace (6 characters a second; a newline brings the next line's
indentation with it, as an editor's auto-indent). After every key the editor asks for an inline completion and
cancels the one still open, as VS Code does. The person:

- at each line start (the body's first line, and after each newline) waits up to `wait_s` (3 s) for ghost text;
  elsewhere sees only an answer that came before the next key;
- accepts only what is exactly right: whole lines of the ghost text that are what comes next (VS Code's accept
  next line, one after the other: the cursor's line to its end, each further one with the newline and
  indentation before it; the newline after the last one taken is typed), after reading it;
- types through a suggestion that matches the key (it stays shown) and otherwise loses it.

What is reported is what the issue measured by hand: the share of the characters that came from ghost text, how
many requests were answered before the next key and how many of those were right, and the line starts answered
(p50 of their latency, where an unanswered one counts as slower than any answer).

With `--next-edit-asks on` the client also asks for next edits as VS Code's does (evals/real/asks.py), and the
person rests a second after each body, as one does after finishing it (where such an ask goes out); `both` types
each body twice in the same server, asks off and on, which one first alternating from body to body, so the
machine's load and the caches the first typing leaves fall on both alike, and reports what the asks cost the
line starts."""
from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.context.syntax import parse
from evals.real.suite import load_projects
from evals.real.corpus import Project
from evals.real.asks import AskTally, NextEditAsks, ask_figures
from evals.real.holes import BODIES, MAX_LINES, MIN_LINES, block_bodies, body_text, cut_lines, read_source
from evals.sessions.replay import (Counts, Replayer, engine_running_note, engine_was_running, next_key, peak_rss_mb, running_server,
                     server_command, server_stats)

CPS = 6.0           # characters a second
WAIT_S = 3.0        # at a line start, the longest wait for ghost text
READ_S = 0.3        # reading a suggestion before accepting it
DONE_S = 1.0        # with next-edit asks: the rest after a body, reading it (an ask goes out after 0.5 s)
SPAN = (3, 12)      # lines of a body
FUNCTIONS = {lang: {t: f for t, f in kinds.items() if "function" in t or "method" in t or t == "func_literal"}
             for lang, kinds in BODIES.items()}


@dataclass
class Body:
    project: str
    language: str
    file: str           # relative to the project's root
    line: int           # 1-based: the body's first line
    lines: int
    indent: str         # the first line's indentation: the cursor stands after it
    typed: str          # what is typed: the body from its first line's code on

    @property
    def key(self) -> str:
        return f"{self.project}/{self.file}:{self.line}"


@dataclass
class Tally:
    """One session's figures (and, summed, a run's)."""
    chars: int = 0
    from_ghost: int = 0
    accepts: int = 0
    keys: int = 0
    requests: int = 0
    in_time: int = 0            # answered before the next key (line starts apart)
    in_time_shown: int = 0      # ... with a non-empty suggestion
    in_time_right: int = 0      # ... whose first line was exactly what came next
    line_starts: int = 0
    line_starts_shown: int = 0  # ... that showed ghost text
    line_start_ms: list[float | None] = field(default_factory=list)   # None: not answered within the wait
    line_start_right: int = 0
    line_start_seen: list[dict] = field(default_factory=list)   # what each line start showed, and what came next
    in_time_seen: list[dict] = field(default_factory=list)      # the same for the answers between keys

    def add(self, other: "Tally") -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


def exact_lines(shown: str, rest: str) -> str:
    """The part of the ghost text `shown` a careful person accepts when `rest` is what they are about to type:
    whole lines that are exactly right, one after the other, each up to its end (not its newline)."""
    took = 0
    while took < len(shown):
        j = took
        while j < len(shown) and shown[j] in "\n \t":   # a line's own start: its newline and indentation
            j += 1
        end = shown.find("\n", j)
        end = len(shown) if end < 0 else end
        piece = shown[took:end]
        if not piece.strip() or not rest.startswith(piece, took) or rest[took + len(piece):][:1] not in ("", "\n"):
            break
        took = end
    return shown[:took]


def function_bodies(text: str, language: str) -> list[tuple[int, int]]:
    kinds = FUNCTIONS.get(language)
    return block_bodies(text, language, parse(text, language), kinds, SPAN) if kinds else []


def pick_bodies(projects: list[Project], n: int, seed: int) -> list[Body]:
    """`n` bodies, the languages taken in turn (so a short run still spans them), each drawn with `seed`."""
    rng = random.Random(seed)
    by_lang: dict[str, list[Body]] = {}
    for p in projects:
        for path, lang in p.source_files():
            try:
                text = read_source(path)
            except OSError:
                continue
            lines = text.split("\n")
            if not MIN_LINES <= len(lines) - text.endswith("\n") <= MAX_LINES:
                continue
            rel = str(path.relative_to(p.root))
            for first, last in function_bodies(text, lang):
                indent, body = body_text(lines, first, last)
                by_lang.setdefault(lang, []).append(Body(p.name, lang, rel, first + 1, last - first + 1, indent, body))
    for bodies in by_lang.values():
        rng.shuffle(bodies)
    out: list[Body] = []
    while len(out) < n and any(by_lang.values()):
        for lang in sorted(by_lang):
            if by_lang[lang] and len(out) < n:
                out.append(by_lang[lang].pop())
    return out


class CarefulTypist:
    """Types one body in an open document (module docstring); its figures in `tally`."""

    def __init__(self, replayer: Replayer, cps: float = CPS, wait_s: float = WAIT_S, read_s: float = READ_S,
                 asks: NextEditAsks | None = None):
        self.r, self.gap, self.wait_s, self.read_s = replayer, 1.0 / cps, wait_s, read_s
        self.asks = asks        # the client's next-edit asks, told of each edit (None: the client sends none)
        self.tally = Tally()

    def _insert(self, uri: str, version: int, text: str, cursor: int, new: str) -> str:
        text = self.r.insert(uri, version, text, cursor, new)
        if self.asks is not None:
            self.asks.changed(uri, version, text, cursor + len(new))
        return text

    async def _ask(self, uri: str, text: str, cursor: int):
        self.tally.requests += 1
        return await self.r.request(uri, text, cursor)

    def _seen(self, got: tuple[str, str] | None, rest: str) -> str:
        """Count an answer that came before the next key; the ghost text it shows."""
        self.tally.in_time += 1
        shown = got[0] if got else ""
        if shown:
            self.tally.in_time_shown += 1
            self.tally.in_time_right += bool(exact_lines(shown, rest))
            self.tally.in_time_seen.append({"want": rest.split("\n")[0], "source": got[1], "got": shown,
                                            "took": len(exact_lines(shown, rest)),
                                            "confidence": self.r.last_confidence, "asked": self.r.last_asked})
        return shown

    async def _glance(self, pending, shown: str, rest: str):
        """The time to the next key: an answer that comes by then replaces the ghost text. (pending, shown)."""
        await asyncio.sleep(self.gap)
        if pending[0].done():
            got = self.r.result(pending[0], pending[2], at_pause=False)
            return None, self._seen(got, rest)
        return pending, shown

    async def type_body(self, uri: str, version: int, text: str, cursor: int, typed: str) -> None:
        t = self.tally
        t.chars += len(typed)
        done, shown = 0, ""
        pending = await self._ask(uri, text, cursor)
        at_line_start = True
        while True:
            rest = typed[done:]
            if at_line_start:
                t.line_starts += 1
                sent = pending[2]
                try:
                    await asyncio.wait_for(asyncio.shield(pending[0]), self.wait_s)
                except (asyncio.TimeoutError, JsonRpcException):
                    pass
                seen = {"want": rest.split("\n")[0], "ms": None, "source": None, "got": None}
                if pending[0].done():
                    got = self.r.result(pending[0], sent, at_pause=True)
                    t.line_start_ms.append((pending[0].done_at - sent) * 1000)
                    shown = got[0] if got else ""
                    t.line_starts_shown += bool(shown)
                    t.line_start_right += bool(shown and exact_lines(shown, rest))
                    seen.update(ms=round(t.line_start_ms[-1]), source=got[1] if got else None, got=shown,
                                took=len(exact_lines(shown, rest)) if shown else 0,
                                confidence=self.r.last_confidence if shown else None,
                                asked=self.r.last_asked if shown else None)
                else:
                    self.r.cancel(pending[0], pending[1])
                    t.line_start_ms.append(None)
                t.line_start_seen.append(seen)
                pending = None
            at_line_start = False
            take = exact_lines(shown, rest) if shown else ""
            if take:
                if pending is not None:
                    self.r.cancel(pending[0], pending[1])
                await asyncio.sleep(self.read_s)
                version += 1
                text = self._insert(uri, version, text, cursor, take)
                method = "tandem/didAccept" if take == shown else "tandem/didPartiallyAccept"
                self.r.client.protocol.notify(method, {"uri": uri, "chars": len(take)})
                cursor, done = cursor + len(take), done + len(take)
                t.from_ghost += len(take)
                t.accepts += 1
                shown = shown[len(take):]
                if done >= len(typed):
                    break
                pending, shown = await self._glance(await self._ask(uri, text, cursor), shown, typed[done:])
                continue   # a new answer may be right again
            key = next_key(rest)
            if pending is not None:
                self.r.cancel(pending[0], pending[1])
            version += 1
            text = self._insert(uri, version, text, cursor, key)
            cursor, done = cursor + len(key), done + len(key)
            t.keys += 1
            shown = shown[len(key):] if shown.startswith(key) else ""
            pending = await self._ask(uri, text, cursor)
            if done >= len(typed):
                break
            at_line_start = "\n" in key
            if at_line_start:
                continue
            pending, shown = await self._glance(pending, shown, typed[done:])
        if pending is not None:
            self.r.cancel(pending[0], pending[1])


def p50_censored(ms: list[float | None]) -> float | None:
    """The median where an unanswered wait is slower than every answer: None when half or more were not
    answered."""
    if not ms:
        return None
    ranked = sorted(ms, key=lambda v: float("inf") if v is None else v)
    mid = ranked[(len(ranked) - 1) // 2]
    if mid is None:
        return None
    if len(ranked) % 2 == 0:
        upper = ranked[len(ranked) // 2]
        return None if upper is None else (mid + upper) / 2
    return mid


def figures(t: Tally) -> dict:
    answered = [v for v in t.line_start_ms if v is not None]
    return {"chars": t.chars, "from_ghost": t.from_ghost,
            "from_ghost_share": t.from_ghost / t.chars if t.chars else None, "accepts": t.accepts,
            "keys": t.keys, "requests": t.requests, "answered_in_time": t.in_time,
            "answered_in_time_shown": t.in_time_shown, "answered_in_time_right": t.in_time_right,
            "line_starts": t.line_starts, "line_starts_answered": len(answered),
            "shown": t.in_time_shown + t.line_starts_shown,
            "wrong_shown": t.in_time_shown + t.line_starts_shown - t.in_time_right - t.line_start_right,
            "line_starts_right": t.line_start_right,
            "line_start_p50_ms": p50_censored(t.line_start_ms),
            "line_start_answered_p50_ms": statistics.median(answered) if answered else None}


def body_modes(asks: str, n: int) -> tuple[str, ...]:
    """The modes the n-th body is typed in: `both` alternates which one goes first."""
    if asks != "both":
        return (asks,)
    return ("off", "on") if n % 2 == 0 else ("on", "off")


async def type_project(server_cmd: list[str], project: Project, bodies: list[Body], options: dict | None,
                       cps: float, wait_s: float, log, asks: str = "off",
                       first: int = 0, gate: str = "", level: str = "balanced"
                       ) -> tuple[list[dict], dict, float | None, bool]:
    """One server with the project as its workspace types the project's bodies, one file open at a time (each
    body once per mode; `first`: the run's count of bodies before these, for the modes' order); returns the
    sessions, the server's stats, its peak RSS and whether its shared engine was already running."""
    out = []
    async with running_server(server_cmd, options, lambda m: log("  " + m), root=project.root,
                              name="tandem-replay-real") as client:
        replayer = Replayer(client, Counts(), 1.0, log)
        for n, b in enumerate(bodies):
            for mode in body_modes(asks, first + n):
                for gated in body_modes(gate, first + n) if gate else ("",):
                    if gated:   # the gate off (eager) or on (`level`), as a user changes the setting
                        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                            settings={"tandem": {**(options or {}),
                                                 "suggestions": level if gated == "on" else "eager"}}))
                    session = await _type_one(client, replayer, project, b, cps, wait_s, log, mode, asks != "off",
                                              gated)
                    out.append(session)
        stats = await server_stats(client)
        peak = peak_rss_mb(client._server.pid, stats)
        was_running = engine_was_running(client._server.pid, stats)
    return out, stats, peak, was_running


async def _type_one(client, replayer: Replayer, project: Project, b: Body, cps: float, wait_s: float, log,
                    mode: str, rest_after: bool, gated: str = "") -> dict:
    path = project.root / b.file
    text, start, _ = cut_lines(read_source(path), b.line, b.lines, b.indent)
    uri = path.resolve().as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=b.language, version=1, text=text)))
    # as Tandem's clients say it (docs/server.md): the fill prepares the place while the user finds it
    client.protocol.notify("tandem/didMoveCursor", {
        "uri": uri, "position": {"line": b.line - 1, "character": len(b.indent)}})
    await asyncio.sleep(1.0)   # finding the place
    asks = NextEditAsks(client) if mode == "on" else None
    typist = CarefulTypist(replayer, cps, wait_s, asks=asks)
    t0 = time.perf_counter()
    await typist.type_body(uri, 1, text, start, b.typed)
    if rest_after:
        await asyncio.sleep(DONE_S)
    if asks is not None:
        asks.closed()
    f = figures(typist.tally)
    said = (f" asks {mode}" if rest_after else "") + (f" gate {gated}" if gated else "")
    log(f"  {b.key} ({b.language}, {b.lines} lines, {len(b.typed)} chars, {time.perf_counter() - t0:.0f} s{said}): "
        f"{f['from_ghost']} chars from ghost text, line starts answered {f['line_starts_answered']}/"
        f"{f['line_starts']}, right {f['line_starts_right']}, shown {f['shown']} (wrong {f['wrong_shown']})"
        + (f", next-edit asks {asks.tally.sent}, proposals {asks.tally.proposals}" if asks else ""))
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    session = {"body": asdict(b), "tally": asdict(typist.tally), **f}
    if rest_after:
        session["asks"] = mode
    if gated:
        session["gate"] = gated
    if asks is not None:
        session["ask_tally"] = asdict(asks.tally)
        session.update(ask_figures(asks.tally))
    return session


async def run_real(projects: list[Project], bodies: list[Body], server_cmd: list[str], options: dict | None,
                   cps: float = CPS, wait_s: float = WAIT_S, log=print, asks: str = "off", gate: str = "",
                   level: str = "balanced") -> dict:
    sessions, peaks, servers, running, typed = [], [], {}, [], 0
    for p in projects:
        mine = [b for b in bodies if b.project == p.name]
        if not mine:
            continue
        log(f"{p.name}: {len(mine)} bodies")
        done, stats, peak, was_running = await type_project(server_cmd, p, mine, options, cps, wait_s, log, asks,
                                                            first=typed, gate=gate, level=level)
        typed += len(mine)
        sessions += done
        peaks.append(peak)
        if was_running:   # an earlier project's server (engines stay up for engineIdleMinutes) or another window's
            running.append(p.name)
        # the day's speed (generation tokens a second) and where the answers came from, as the server counts them
        servers[p.name] = {k: stats.get(k) for k in ("tok_s", "by_source", "suggestions", "latency_ms", "next_edit")}
        servers[p.name]["cursor_moves"] = (stats.get("fill") or {}).get("cursor_moves")   # the moves it took
    out = {"cps": cps, "wait_s": wait_s, "options": options or {}, "asks_mode": asks}
    if gate == "both":   # the gate off and on, side by side: what it costs and what it saves
        out.update(gate_mode=gate, gate_level=level)
        by_gate = {mode: summarise([s for s in sessions if s.get("gate") == mode]) for mode in ("off", "on")}
        out["by_mode"] = by_gate
        out["cost"] = {k: _change(by_gate["off"]["total"][k], by_gate["on"]["total"][k])
                       for k in ("line_start_p50_ms", "line_start_answered_p50_ms", "shown", "wrong_shown",
                                 "from_ghost")}
        out["summary"] = {f"gate_{m}": v["total"] for m, v in by_gate.items()}
        out.update({"peak_rss_mb": max((p for p in peaks if p), default=None), "engine_was_running": running,
                    "servers": servers, "sessions": sessions})
        return out
    if gate:
        out.update(gate_mode=gate, gate_level=level)
    by_mode = {mode: summarise([s for s in sessions if s.get("asks", "off") == mode])
               for mode in (("off", "on") if asks == "both" else (asks,))}
    if asks == "both":
        out["by_mode"] = by_mode
        out["cost"] = {k: _change(by_mode["off"]["total"][k], by_mode["on"]["total"][k])
                       for k in ("line_start_p50_ms", "line_start_answered_p50_ms")}
        # the ledger's headline figures, one row per mode
        out["summary"] = {f"asks_{m}": {**v["total"], **v.get("next_edit_asks", {})} for m, v in by_mode.items()}
    else:
        out.update(by_mode[asks])
    out.update({"peak_rss_mb": max((p for p in peaks if p), default=None), "engine_was_running": running,
                "servers": servers, "sessions": sessions})
    return out


def summarise(sessions: list[dict]) -> dict:
    total, by_lang, asked = Tally(), {}, AskTally()
    for s in sessions:
        t = Tally(**s["tally"])
        total.add(t)
        by_lang.setdefault(s["body"]["language"], Tally()).add(t)
        if "ask_tally" in s:
            asked.add(AskTally(**s["ask_tally"]))
    out = {"total": figures(total), "by_language": {k: figures(v) for k, v in sorted(by_lang.items())}}
    if any("ask_tally" in s for s in sessions):
        out["next_edit_asks"] = ask_figures(asked)
    return out


def _change(off: float | None, on: float | None) -> dict:
    return {"off": off, "on": on, "change": None if not off or on is None else round(on / off - 1, 4)}


def print_real(r: dict, out=sys.stdout) -> None:
    def ms(v):
        return f"> {r['wait_s']:.0f} s" if v is None else f"{v:,.0f} ms"

    asks = r.get("asks_mode", "off")
    gate = r.get("gate_mode", "")
    both = asks == "both" or gate == "both"
    bodies = len({(s["body"]["project"], s["body"]["file"], s["body"]["line"]) for s in r["sessions"]})
    print(f"typing in real files: {bodies} function bodies, {r['cps']:g} characters a second, "
          f"waiting up to {r['wait_s']:g} s at line starts, accepting only exact lines"
          + {"on": "; next-edit asks on", "both": "; each typed twice, next-edit asks off and on"}.get(asks, "")
          + {"on": f"; suggestions {r.get('gate_level')}", "off": "; suggestions eager",
             "both": f"; each typed twice, suggestions eager (gate off) and {r.get('gate_level')} (on)"}.get(gate, ""),
          file=out)
    label = "the gate" if gate == "both" else "next-edit asks"
    for mode, part in (r["by_mode"].items() if both else [(asks, r)]):
        if both:
            print(f"{label} {mode}:", file=out)
        print(f"{'':12} {'chars':>6} {'ghost':>6} {'share':>6} {'in time':>8} {'shown':>6} {'right':>6} "
              f"{'starts':>7} {'answ.':>6} {'right':>6} {'p50':>9} {'shown':>6} {'wrong':>6}", file=out)
        for name, f in list(part["by_language"].items()) + [("all", part["total"])]:
            share = "-" if f["from_ghost_share"] is None else f"{100 * f['from_ghost_share']:.1f}%"
            print(f"{name:12} {f['chars']:6d} {f['from_ghost']:6d} {share:>6} {f['answered_in_time']:8d} "
                  f"{f['answered_in_time_shown']:6d} {f['answered_in_time_right']:6d} {f['line_starts']:7d} "
                  f"{f['line_starts_answered']:6d} {f['line_starts_right']:6d} {ms(f['line_start_p50_ms']):>9} "
                  f"{f['shown']:6d} {f['wrong_shown']:6d}", file=out)
        a = part.get("next_edit_asks")
        if a:
            print(f"  next-edit asks {a['asks_sent']} ({a['asks_cancelled']} cancelled by the typing), answered "
                  f"{a['asks_answered']} (and {a['asks_stale']} as the typing went on), proposals {a['proposals']}; "
                  f"answer p50 {ms(a['answer_ms_p50']) if a['answer_ms_p50'] is not None else '-'}, proposal p50 "
                  f"{ms(a['proposal_ms_p50']) if a['proposal_ms_p50'] is not None else '-'}", file=out)
    print("  (in time: answered before the next key, line starts apart; right: its first line exactly what came "
          "next; p50: line starts, an unanswered one counted slower than any; shown, wrong: every suggestion "
          "seen, in time or at a line start, and those whose first line was not what came next)", file=out)
    if gate == "both":
        for key, what, fmt in (("wrong_shown", "wrong suggestions shown", str), ("shown", "suggestions shown", str),
                               ("from_ghost", "characters from ghost text", str),
                               ("line_start_p50_ms", "line starts p50", ms)):
            c = r["cost"][key]
            change = "-" if c["change"] is None else f"{100 * c['change']:+.1f} %"
            print(f"{what}: gate off {fmt(c['off'])}, on {fmt(c['on'])}: {change}", file=out)
    if asks == "both":
        for key, what in (("line_start_p50_ms", "p50"), ("line_start_answered_p50_ms", "answered p50")):
            c = r["cost"][key]
            change = "-" if c["change"] is None else f"{100 * c['change']:+.1f} %"
            print(f"line starts {what}: asks off {ms(c['off'])}, on {ms(c['on'])}: {change}", file=out)
    if r.get("peak_rss_mb"):
        running = r.get("engine_was_running") or []
        print(f"peak RSS {r['peak_rss_mb']:,.0f} MB, the largest of the projects' servers with their engine"
              + engine_running_note(bool(running), f" for {', '.join(running)}"), file=out)


def cli(args) -> dict:
    """`tandem-eval replay --real N`."""
    if args.real < 1 or args.cps <= 0 or args.wait < 0:
        raise ValueError("--real needs at least 1 body, --cps a positive speed and --wait no negative time")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr)
    _, projects = load_projects(args.corpus, args.projects, args.half, log)
    bodies = pick_bodies(projects, args.real, args.seed)
    if not bodies:
        raise ValueError("no function body of 3-12 lines in a file of 100-3000 lines in these projects")
    cmd = server_command(args)
    options = json.loads(args.options) if args.options else {}
    asks = getattr(args, "next_edit_asks", "off")
    gate = getattr(args, "gate", "") or ""
    level = getattr(args, "gate_level", "balanced")
    result = asyncio.run(run_real(projects, bodies, cmd, options, args.cps, args.wait, log, asks, gate, level))
    result.update(half=args.half, seed=args.seed)
    print_real(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return result
