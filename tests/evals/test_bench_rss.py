"""The benchmarks' memory figure (bench/replay.py peak_rss_mb): the server's peak plus its shared engine's, with
real processes. An engine already running before the server (an earlier run's, another window's) has a lifetime
peak that says nothing of this run: its size now stands in for it."""
import os
import subprocess
import sys
import time

from evals.sessions.replay import engine_was_running, peak_rss_mb, rss_peak_mb, started_before

# a child that grows to ~200 MB, then shrinks back and waits: its peak stays, its size now does not
GROW_AND_SHRINK = ("import sys, time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
                   "del b\nprint('ready', flush=True)\ntime.sleep(60)\n")


def child(code: str = "import time; print('ready', flush=True); time.sleep(60)") -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def stats_with_engine(pid: int) -> dict:
    return {"backend": {"shared_engine": {"pid": pid, "socket": "/tmp/x.sock", "up": True}}}


def test_start_order_of_two_processes():
    p = child()
    try:
        assert started_before(os.getpid(), p.pid) and not started_before(p.pid, os.getpid())
        assert not started_before(os.getpid(), 2 ** 22 + 7)   # no such process: not "before"
    finally:
        p.kill()


def test_an_engine_started_before_the_server_counts_with_its_size_now_not_its_lifetime_peak():
    engine = child(GROW_AND_SHRINK)    # an engine that once held more (its earlier work)
    time.sleep(0.05)
    server = child()
    try:
        hwm, now = rss_peak_mb(engine.pid), rss_peak_mb(engine.pid, "VmRSS")
        assert hwm > now + 150, (hwm, now)
        st = stats_with_engine(engine.pid)
        assert engine_was_running(server.pid, st)
        got = peak_rss_mb(server.pid, st)
        assert abs(got - (rss_peak_mb(server.pid) + rss_peak_mb(engine.pid, "VmRSS"))) < 5, got
        # the engine started by this run (after the server): its peak counts
        assert not engine_was_running(engine.pid, stats_with_engine(server.pid))
        assert abs(peak_rss_mb(engine.pid, stats_with_engine(server.pid))
                   - (hwm + rss_peak_mb(server.pid))) < 5
        # no shared engine: the server alone
        assert peak_rss_mb(server.pid, {}) == rss_peak_mb(server.pid)
    finally:
        engine.kill()
        server.kill()
