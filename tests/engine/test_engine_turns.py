"""The engine process's order among jobs that wait for the models (`Turns`): a window's request before any fill
ahead, the window that asked last first, and jobs of one rank in the order they came; and the cancel flag that
tells its listeners (how a window's cancel reaches the engine process without polling)."""
import threading
import time

from lsp_server.engine.shared.turns import FILL, REQUEST, Turns


def queue_up(turns: Turns, jobs: list[tuple[str, callable]], meanwhile=lambda: None) -> list[str]:
    """Hold the models, queue `jobs` (name, rank) one by one, release: the order the jobs got their turns."""
    order, held, release = [], threading.Event(), threading.Event()

    def holder():
        with turns.turn(lambda: (REQUEST, 0.0)):
            held.set()
            release.wait(10)

    def job(name, rank):
        with turns.turn(rank):
            order.append(name)

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    assert held.wait(10)
    for i, (name, rank) in enumerate(jobs):
        t = threading.Thread(target=job, args=(name, rank))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 10
        while turns.waiting() < i + 1 and time.monotonic() < deadline:
            time.sleep(0.005)
    meanwhile()
    release.set()
    for t in threads:
        t.join(10)
    return order


def test_requests_go_before_fills_and_the_window_that_asked_last_first():
    asked = {"a": 1.0, "b": 2.0}
    order = queue_up(Turns(), [
        ("fill a", lambda: (FILL, 0.0)),
        ("request a", lambda: (REQUEST, -asked["a"])),
        ("fill b", lambda: (FILL, 0.0)),
        ("request b", lambda: (REQUEST, -asked["b"])),
    ])
    assert order == ["request b", "request a", "fill a", "fill b"]


def test_a_window_that_asks_again_while_waiting_moves_forward():
    asked = {"a": 1.0, "b": 2.0}
    turns = Turns()
    rank = {w: (lambda w=w: (REQUEST, -asked[w])) for w in asked}
    # window a typed again after b asked: its waiting request is the one the user sees now
    assert queue_up(turns, [("b", rank["b"]), ("a", rank["a"])], lambda: asked.update(a=3.0)) == ["a", "b"]
    asked["a"] = 1.0
    assert queue_up(turns, [("b", rank["b"]), ("a", rank["a"])]) == ["b", "a"]


def test_one_job_at_a_time():
    turns, inside, most = Turns(), [0], [0]
    lock = threading.Lock()

    def job():
        with turns.turn(lambda: (FILL, 0.0)):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.01)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=job) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == 1 and turns.waiting() == 0


def test_a_cancel_tells_its_listeners_when_set_and_when_its_limit_shrinks():
    """What lets the shared engine's client pass a cancel on at once instead of polling for it."""
    from lsp_server.engine.cancel import Cancel

    seen: list[int] = []
    c = Cancel()
    stop = c.listen(lambda flag: seen.append(flag.keep_until))
    assert seen == []
    c.set_keeping(200)
    c.set_keeping(50)      # a newer request shares less: the limit shrinks, listeners hear it
    c.set_keeping(120)     # never grows back
    stop()
    c.set()
    assert seen == [200, 50, 50] and c.keep_until == 50
    late: list[int] = []
    c.listen(lambda flag: late.append(flag.keep_until))   # set already: told at once
    assert late == [50]
