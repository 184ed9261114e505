"""How the bench times paths side by side and turns their passes into a figure (control logic: made-up jobs and
timings, no models; the real models side by side are in test_engine.py and test_cli.py)."""
import threading
import time

import pytest

from lsp_server.bench.run import aa_noise, path_seconds
from lsp_server.bench.side_by_side import DecodeThread, Rotation, side_by_side
from lsp_server.engine.speculative import Generation


def gen(seconds: float) -> Generation:
    return Generation("x", [1, 2], "length", 10, 10, 0.0, seconds, 2)


def stepping(log: list, name: str, steps: int, busy: list):
    """A job that takes `steps` steps, logging each and checking that no other job steps at the same time."""
    def job(hand_on):
        for i in range(steps):
            busy.append(name)
            assert len(busy) == 1, f"{busy} stepping at once"
            log.append((name, i))
            time.sleep(0.002)
            busy.remove(name)
            if i < steps - 1:
                hand_on()
        return gen(float(steps))
    return job


def test_paths_take_turns_a_step_each_and_the_others_go_on_when_one_is_done():
    log, busy = [], []
    out = side_by_side({"a": stepping(log, "a", 3, busy), "b": stepping(log, "b", 1, busy),
                        "c": stepping(log, "c", 2, busy)})
    assert log == [("a", 0), ("b", 0), ("c", 0), ("a", 1), ("c", 1), ("a", 2)]
    assert {k: g.gen_s for k, g in out.items()} == {"a": 3.0, "b": 1.0, "c": 2.0}


def test_an_error_in_one_path_ends_its_turns_and_is_raised_after_the_others():
    log, busy = [], []

    def broken(hand_on):
        log.append(("x", 0))
        hand_on()
        raise RuntimeError("model gone")

    with pytest.raises(RuntimeError, match="model gone"):
        side_by_side({"x": broken, "a": stepping(log, "a", 3, busy)})
    assert log == [("x", 0), ("a", 0), ("a", 1), ("a", 2)]


def test_what_the_paths_hand_over_runs_on_the_thread_that_serves_it_errors_included():
    """Every decode of a side-by-side run on one thread (llama.cpp's OpenMP teams: a team per path slowed every
    decode); what a path hands over runs on the caller's thread, its error is raised in the path."""
    decodes = DecodeThread()
    ran_on = []

    def decode(x):
        ran_on.append(threading.get_ident())
        if x < 0:
            raise ValueError("bad batch")
        return x * 2

    def job(values):
        def run(hand_on):
            out = []
            for i, v in enumerate(values):
                try:
                    out.append(decodes(decode, v))
                except ValueError as e:
                    out.append(str(e))
                if i < len(values) - 1:
                    hand_on()
            return Generation(repr(out), [], "length", 0, 0, 0.0, 0.0, 0)
        return run

    out = side_by_side({"a": job([1, 2, -1]), "b": job([5])}, decodes)
    assert out["a"].text == "[2, 4, 'bad batch']" and out["b"].text == "[10]"
    assert set(ran_on) == {threading.get_ident()} and len(ran_on) == 4
    assert decodes(decode, 3) == 6   # asked on its own thread: run there and then


def test_the_rotation_skips_a_path_that_left_before_its_turn():
    r = Rotation(["a", "b", "c"])
    r.wait("a")
    done = threading.Event()

    def c_waits():
        r.wait("c")
        done.set()

    t = threading.Thread(target=c_waits)
    t.start()
    r.leave("a")          # b's turn now; then b leaves and c's turn comes
    assert not done.wait(0.05)
    r.leave("b")
    assert done.wait(2)
    t.join()


def test_side_by_side_passes_count_by_their_mean_one_after_the_other_by_the_fastest():
    prompts = [[gen(1.0), gen(1.2), gen(1.4)], [gen(2.0), gen(2.5)]]
    assert path_seconds(prompts, True) == [pytest.approx(1.2), pytest.approx(2.25)]
    assert path_seconds(prompts, False) == [1.0, 2.0]


def test_the_a_a_check_is_how_far_the_two_plain_paths_read_apart():
    plain = [[gen(1.0), gen(1.0)], [gen(2.0)]]
    again = [[gen(1.1), gen(0.9)], [gen(2.2)]]
    assert aa_noise(plain, again) == pytest.approx(abs(3.0 / 3.2 - 1))
    assert aa_noise(plain, plain) == 0
    assert aa_noise(plain, []) is None     # two servers: no second plain path
