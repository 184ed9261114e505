"""The KV store's bookkeeping (budget, least recently used out, starts of an entry replaced by it), without
models; the store with the real models is in test_engine.py and test_server_pages.py."""
import numpy as np

from lsp_server.engine.kvstore import KVStore


def blob(n_bytes):
    return np.zeros(n_bytes, dtype=np.uint8)


def test_best_finds_the_longest_shared_start():
    s = KVStore(10_000)
    s.add([1, 2, 3, 4], blob(10))
    s.add([1, 2, 9], blob(10))
    e, n = s.best([1, 2, 3, 4, 5])
    assert n == 4 and list(e.tokens) == [1, 2, 3, 4]
    e, n = s.best([1, 2, 9, 9])
    assert n == 3
    assert s.best([7])[1] == 0


def test_an_entry_that_is_a_start_of_a_new_one_is_dropped():
    s = KVStore(10_000)
    s.add([1, 2], blob(10))
    s.add([1, 2, 3], blob(10))
    assert len(s) == 1 and s.covers([1, 2]) and s.covers([1, 2, 3]) and not s.covers([1, 2, 3, 4])


def test_the_budget_holds_least_recently_used_first_out():
    s = KVStore(100)
    for i in range(5):
        s.add([i, 1, 2], blob(30))
        assert s.nbytes <= 100
    assert len(s) == 3 and s.counters.evictions == 2
    kept = sorted(int(e.tokens[0]) for e in s.entries)
    assert kept == [2, 3, 4]
    s.touch(next(e for e in s.entries if e.tokens[0] == 2))   # used again: now the newest
    s.add([9, 9], blob(30))
    assert sorted(int(e.tokens[0]) for e in s.entries) == [2, 4, 9]


def test_a_state_larger_than_the_budget_is_refused_and_the_count_is_bounded():
    s = KVStore(100, max_entries=2)
    assert s.add([1], blob(101)) is None and s.counters.refused == 1 and len(s) == 0
    for i in range(4):
        s.add([i], blob(1))
    assert len(s) == 2
    s.resize(0)
    assert len(s) == 0 and s.summary()["limit_bytes"] == 0
