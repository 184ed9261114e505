"""`tandem-eval soak`: the replay sessions typed again and again against one `tandem serve`, compressed in time,
until the users' own clock reaches the asked length (an hour by default), while the server's memory and the
size of each structure that grows with use are sampled. Every cache must stay within its limit (README,
"Memory limits") and resident memory must stop growing once the server is warm."""
from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from evals.sessions.replay import (Counts, Replayer, Session, default_sessions, load_sessions, running_server, server_command,
                     server_stats)

# memory growth allowed from the end of the first round of sessions (the server warm) to the end
GROWTH_LIMIT_MIB = 100


def _sample(t0: float, stats: dict, typing_s: float) -> dict:
    mem = stats["memory"]
    # the shared engine process's resident size counts with the server's: the models and the KV store live there
    engine = ((stats.get("backend") or {}).get("shared_engine") or {}).get("rss_mib")
    rss = mem["rss_mib"] + engine if mem["rss_mib"] is not None and engine is not None else mem["rss_mib"]
    out = {"wall_s": round(time.perf_counter() - t0, 1), "typing_min": round(typing_s / 60, 2),
           "rss_mib": rss, "engine_rss_mib": engine, "jobs": mem["jobs"], "pending_requests": mem["pending_requests"],
           "documents": mem["open_documents"], "handlers_in_flight": mem.get("handlers_in_flight"),
           "model_calls": stats["model"]["calls"], "model_peak": stats["model"]["peak_concurrent"]}
    # every bounded structure: its size (the entry's first count) next to its limit
    for key, entry in mem.items():
        if isinstance(entry, dict) and "limit" in entry:
            out[key] = next(v for k, v in entry.items() if k != "limit" and isinstance(v, (int, float)))
    if isinstance(mem.get("kv_store"), dict):
        out["kv_store_bytes"] = mem["kv_store"]["bytes"]
    return out


def _limits(stats: dict) -> dict:
    mem = stats["memory"]
    out = {k: v["limit"] for k, v in mem.items() if isinstance(v, dict) and "limit" in v}
    if isinstance(mem.get("kv_store"), dict):
        out["kv_store_bytes"] = mem["kv_store"]["budget_bytes"]
    return out


async def soak(sessions: list[Session], server_cmd: list[str], minutes: float, speed: float,
               patience: float = 1.5, options: dict | None = None, sample_s: float = 10.0, log=print) -> dict:
    counts = Counts()
    samples: list[dict] = []
    limits: dict = {}
    t0 = time.perf_counter()
    async with running_server(server_cmd, options, log) as client:
        # compressed time: at a pause the typist waits for ghost text only so long, then types on
        replayer = Replayer(client, counts, speed, log, patience=patience)

        async def sampler():
            while True:
                st = await server_stats(client)
                limits.update(_limits(st))
                samples.append(_sample(t0, st, counts.typing_s + replayer_clock()))
                await asyncio.sleep(sample_s)

        def replayer_clock() -> float:   # the session in progress counts too
            return replayer.typist.clock if replayer.typist is not None else 0.0

        task = asyncio.ensure_future(sampler())
        rounds, warm_at = 0, None
        try:
            while counts.typing_s < minutes * 60:
                for s in sessions:
                    # a new seed each round: other pauses, other accepts, other requests
                    await replayer.session(replace(s, seed=s.seed + 1000 * rounds), None)
                    if counts.typing_s >= minutes * 60:
                        break
                rounds += 1
                if warm_at is None:
                    warm_at = len(samples)
                log(f"round {rounds}: {counts.typing_s / 60:.1f} of {minutes:g} minutes typed, "
                    f"{counts.keystrokes} keystrokes, {time.perf_counter() - t0:.0f}s")
        finally:
            task.cancel()
        samples.append(_sample(t0, await server_stats(client), counts.typing_s))
    return soak_report(samples, limits, counts, rounds, warm_at or 0, minutes, speed, patience,
                       time.perf_counter() - t0)


def soak_report(samples: list[dict], limits: dict, c: Counts, rounds: int, warm_at: int, minutes: float,
                speed: float, patience: float, seconds: float) -> dict:
    rss = [s["rss_mib"] for s in samples if s["rss_mib"] is not None]
    warm = [s["rss_mib"] for s in samples[warm_at:] if s["rss_mib"] is not None] or rss
    peaks = {k: max(s.get(k, 0) for s in samples) for k in limits}
    return {
        "typing_minutes": round(c.typing_s / 60, 1), "asked_minutes": minutes, "speed": speed,
        "patience_s": patience, "non_empty_answers": c.answered - c.empty,
        "wall_seconds": round(seconds, 1), "rounds": rounds, "keystrokes": c.keystrokes, "requests": c.requests,
        "answered": c.answered, "accepted": c.accepted,
        "model_calls": samples[-1]["model_calls"] if samples else 0,
        "model_peak_concurrent": max((s["model_peak"] for s in samples), default=0),
        "rss_mib": {"first": rss[0] if rss else None, "warm": warm[0] if warm else None,
                    "max": max(rss, default=None), "last": rss[-1] if rss else None},
        "growth_after_warm_mib": round(warm[-1] - warm[0], 1) if warm else None,
        "growth_limit_mib": GROWTH_LIMIT_MIB,
        "caches": {k: {"max": peaks[k], "limit": limits[k]} for k in limits},
        "within_limits": all(limits[k] is None or peaks[k] <= limits[k] for k in limits),
        "samples": samples,
    }


def print_report(r: dict, out=sys.stdout) -> None:
    m = r["rss_mib"]
    print(f"\nsoak: {r['typing_minutes']:g} minutes of typing (x{r['speed']:g}) in {r['wall_seconds'] / 60:.1f} "
          f"minutes, {r['rounds']} rounds, {r['keystrokes']:,} keystrokes, {r['requests']:,} requests, "
          f"{r['answered']:,} answered ({r['non_empty_answers']:,} with a suggestion), {r['accepted']} accepted; "
          f"{r['model_calls']:,} model calls, at most {r['model_peak_concurrent']} at a time", file=out)
    print(f"  resident memory: {m['first']} MiB at the first sample, {m['warm']} warm (after round 1), "
          f"max {m['max']}, last {m['last']}; growth after warm-up {r['growth_after_warm_mib']} MiB "
          f"(limit {r['growth_limit_mib']})", file=out)
    for k, v in r["caches"].items():
        print(f"  {k:<18} max {v['max']:>5} of {v['limit']}", file=out)
    growth_ok = r["growth_after_warm_mib"] is not None and r["growth_after_warm_mib"] < r["growth_limit_mib"]
    print(f"  every cache within its limit: {'yes' if r['within_limits'] else 'NO'}; memory flat after warm-up: "
          f"{'yes' if growth_ok else 'NO'}", file=out)


def run_soak(args) -> dict:
    sessions = load_sessions(Path(args.sessions) if args.sessions else default_sessions())
    cmd = server_command()
    options = json.loads(args.options) if args.options else {}
    result = asyncio.run(soak(sessions, cmd, args.minutes, args.speed, args.patience, options, args.sample_s,
                              log=lambda m: print(m, file=sys.stderr)))
    print_report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return result
