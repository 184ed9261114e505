"""What a replay of typing sessions measured, as figures (`report`) and as the table it prints."""
from __future__ import annotations

import statistics
import sys

from lsp_server.service.stats import percentile

TARGETS = {"p50_ms": 600, "p95_ms": 2000, "evaluated_fraction": 0.15, "rss_mb": 2560}


def engine_running_note(running: bool, where: str = "") -> str:
    """What a report adds to its peak RSS where the shared engine was already running (peak_rss_mb then counts
    the engine's size at the end)."""
    return f" (the shared engine was already running{where}: its size at the end)" if running else ""


def report(c, st: dict, peak_mb: float | None, seconds: float, speed: float,
           engine_running: bool = False) -> dict:
    model = [r for r in st.get("records", []) if r["source"] in ("model", "fast") and r["prompt_tokens"]]
    fractions = [r["prompt_evaluated"] / r["prompt_tokens"] for r in model]
    generated = st["tokens"]["generated"]
    return {
        "sessions_seconds": round(seconds, 1), "speed": speed,
        "keystrokes": c.keystrokes, "requests": c.requests, "answered": c.answered,
        "cancelled_by_client": c.cancelled_by_client, "errors": c.errors, "empty_answers": c.empty,
        "sources": c.sources,
        "latency_ms": {"at_pause_p50": percentile(c.pause_latency_ms, 50), "at_pause_p95": percentile(c.pause_latency_ms, 95),
                       "at_pause_n": len(c.pause_latency_ms),
                       "at_pause": [{"ms": round(ms, 1), "source": src}
                                    for ms, src in zip(c.pause_latency_ms, c.pause_sources)],
                       "answered_p50": percentile(c.answered_latency_ms, 50),
                       "answered_p95": percentile(c.answered_latency_ms, 95)},
        "typing_through": {"requests": c.typing_through, "cache_hits": c.typing_through_cache,
                           "reuse": c.typing_through_reuse,
                           "hit_rate": (c.typing_through_cache / c.typing_through) if c.typing_through else None},
        "accepted": {"suggestions": c.accepted, "chars": c.accepted_chars},
        "prompt": {"model_requests": len(model),
                   "evaluated_median": statistics.median([r["prompt_evaluated"] for r in model]) if model else None,
                   "size_median": statistics.median([r["prompt_tokens"] for r in model]) if model else None,
                   "evaluated_fraction_median": statistics.median(fractions) if fractions else None},
        "tokens": {"generated": generated, "thrown_away": st["tokens"]["wasted"],
                   "thrown_away_fraction": st["tokens"]["wasted"] / generated if generated else None},
        "warmups": st.get("warmups"),
        "server_by_source": st.get("by_source"),
        "peak_rss_mb": round(peak_mb, 1) if peak_mb else None,
        "engine_was_running": engine_running,
        "server_records": [r for r in st.get("records", []) if r["source"] in ("model", "fast", "reuse")],
        "targets": TARGETS,
    }


def print_report(r: dict, out=sys.stdout) -> None:
    lat, pr, tt, tok = r["latency_ms"], r["prompt"], r["typing_through"], r["tokens"]

    def ms(v):
        return "-" if v is None else f"{v:,.0f} ms"

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f} %"

    def mark(ok):
        return "ok" if ok else "MISSED"
    p50, p95 = lat["at_pause_p50"], lat["at_pause_p95"]
    frac, rss = pr["evaluated_fraction_median"], r["peak_rss_mb"]
    print(f"replay: {r['keystrokes']} keystrokes, {r['requests']} requests, {r['answered']} answered, "
          f"{r['cancelled_by_client']} cancelled by the client, {r['errors']} errors, "
          f"{r['sessions_seconds']:.0f}s", file=out)
    print(f"  last keystroke -> completion (at pauses, n={lat['at_pause_n']}): p50 {ms(p50)}, p95 {ms(p95)}"
          f"   target p50 <= {TARGETS['p50_ms']} ms: {mark(p50 is not None and p50 <= TARGETS['p50_ms'])}, "
          f"p95 <= {TARGETS['p95_ms']} ms: {mark(p95 is not None and p95 <= TARGETS['p95_ms'])}", file=out)
    print(f"  every answered request: p50 {ms(lat['answered_p50'])}, p95 {ms(lat['answered_p95'])}; "
          f"answers by source: {r['sources']}", file=out)
    print(f"  typing through a shown suggestion: {tt['requests']} requests, {tt['cache_hits']} from the cache "
          f"({pct(tt['hit_rate'])}), {tt['reuse']} from a running generation; "
          f"{r['accepted']['suggestions']} suggestions accepted ({r['accepted']['chars']} chars)", file=out)
    print(f"  prompt tokens evaluated per model request: median {pr['evaluated_median']} of "
          f"{pr['size_median']} ({pct(frac)})   target <= {pct(TARGETS['evaluated_fraction'])}: "
          f"{mark(frac is not None and frac <= TARGETS['evaluated_fraction'])}", file=out)
    print(f"  tokens generated {tok['generated']}, thrown away {tok['thrown_away']} "
          f"({pct(tok['thrown_away_fraction'])})", file=out)
    running = engine_running_note(r.get("engine_was_running", False))
    print(f"  peak RSS of the server and its engine process: {rss:,.0f} MB{running}   target <= {TARGETS['rss_mb']:,} MB: "
          f"{mark(rss is not None and rss <= TARGETS['rss_mb'])}" if rss else "  peak RSS: unknown", file=out)


