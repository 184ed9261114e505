"""`tandem kv-bench`: the two ways to keep several prompts' KV states that llama.cpp offers, measured side by
side on this machine with the target model: copying one sequence's state out to RAM and back
(`llama_state_seq_get_data` / `llama_state_seq_set_data`, what the KV store does) and one unified cache holding
a sequence per prompt (`n_seq_max`, `kv_unified`; a copy between sequences is `llama_memory_seq_cp`), where
every decode attends over all the cells held. Also what evaluating the prompt again costs, and the resident
size of the server's engine (default settings) with its KV store held at its budget."""
from __future__ import annotations

import ctypes
import sys
import time

import numpy as np

import llama_cpp

from lsp_server.engine import EngineConfig, LocalEngine, registry
from lsp_server.engine.engine import resident_mib
from lsp_server.engine.llama import LlamaModel


def _tokens(n: int, salt: int = 0) -> list[int]:
    return [(i * 7919 + salt) % 5000 + 200 for i in range(n)]   # arbitrary ordinary tokens


def _best(f, reps: int) -> float:
    out = []
    for r in range(reps):
        t0 = time.perf_counter()
        f(r)
        out.append(time.perf_counter() - t0)
    return min(out)   # the least disturbed sample: this machine is shared


def snapshot_figures(path: str, n: int, threads: int, reps: int) -> dict:
    m = LlamaModel(path, n_ctx=n + 256, n_threads=threads, name="target")
    try:
        toks = _tokens(n)
        t0 = time.perf_counter()
        m.decode(toks)
        evaluate_s = time.perf_counter() - t0
        size = llama_cpp.llama_state_seq_get_size(m.ctx, 0)
        blob = np.empty(size, dtype=np.uint8)
        ptr = blob.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
        save = _best(lambda r: llama_cpp.llama_state_seq_get_data(m.ctx, ptr, size, 0), reps)

        def restore(r):
            llama_cpp.llama_memory_seq_rm(m.mem, 0, -1, -1)
            if not llama_cpp.llama_state_seq_set_data(m.ctx, ptr, size, 0):
                raise RuntimeError("llama.cpp refused the state it wrote")
        load = _best(restore, reps)
        m.tokens = list(toks)
        t1 = _best(lambda r: (m.decode([300 + r]), m.truncate(n)), reps)
        t64 = _best(lambda r: (m.decode([300 + r] * 64), m.truncate(n)), reps)
        return {"tokens": n, "evaluate_s": evaluate_s, "state_mib": size / 2 ** 20, "save_ms": save * 1e3,
                "restore_ms": load * 1e3, "decode1_ms": t1 * 1e3, "decode64_ms": t64 * 1e3}
    finally:
        m.close()


def unified_figures(path: str, n: int, n_seq: int, threads: int, reps: int) -> dict:
    """A unified cache holding `n_seq` sequences of n tokens: what one decode on one of them costs."""
    mp = llama_cpp.llama_model_default_params()
    mp.load_mode = llama_cpp.LLAMA_LOAD_MODE_NONE
    model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = (n + 128) * n_seq, 512, 512
    cp.n_seq_max, cp.kv_unified = n_seq, True
    cp.n_threads = cp.n_threads_batch = threads
    ctx = llama_cpp.llama_init_from_model(model, cp)
    mem = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    try:
        def decode(seq: int, toks: list[int], pos0: int) -> None:
            for s in range(0, len(toks), 512):
                chunk = toks[s:s + 512]
                for i, t in enumerate(chunk):
                    batch.token[i], batch.pos[i], batch.n_seq_id[i] = t, pos0 + s + i, 1
                    batch.seq_id[i][0], batch.logits[i] = seq, int(i == len(chunk) - 1)
                batch.n_tokens = len(chunk)
                if llama_cpp.llama_decode(ctx, batch) != 0:
                    raise RuntimeError("llama_decode failed")
        for s in range(n_seq):
            decode(s, _tokens(n, s), 0)

        def step(k):
            return lambda r: (decode(0, [300 + r] * k, n), llama_cpp.llama_memory_seq_rm(mem, 0, n, -1))
        t1, t64 = _best(step(1), reps), _best(step(64), reps)
        cp_s = _best(lambda r: (llama_cpp.llama_memory_seq_cp(mem, 0, n_seq - 1, 0, n),
                                llama_cpp.llama_memory_seq_rm(mem, n_seq - 1, n, -1)), reps) if n_seq > 1 else 0.0
        return {"sequences": n_seq, "decode1_ms": t1 * 1e3, "decode64_ms": t64 * 1e3, "seq_cp_ms": cp_s * 1e3,
                "kv_mib_reserved": (n + 128) * n_seq * 28 * 1024 / 2 ** 20}
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)


def peak_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def full_store_figures(target: str | None, n: int) -> dict:
    """The engine as the server builds it with default settings (the automatic budget, the draft model unloaded
    where it cannot pay), one real page state evaluated and saved, then the store filled to its budget with
    copies of it under other keys (real bytes, as many pages would be): the process's resident size then."""
    engine = LocalEngine(EngineConfig(target_path=target, stats_path=""), log=lambda msg: None)
    try:
        m = engine.target
        store = m.store
        rss_loaded = resident_mib()
        toks = _tokens(n)
        m.prefill(toks, keep=len(toks))
        m.prefill(_tokens(8, salt=1))          # another prompt: the page is saved before it is overwritten
        blob = store.entries[-1].blob
        i = 2
        while store.nbytes + blob.nbytes <= store.limit_bytes and len(store) < store.max_entries:
            store.add(_tokens(n, salt=i), blob.copy())
            i += 1
        return {"budget_mib": engine.store_budget_mib, "states": len(store), "held_mib": store.nbytes / 2 ** 20,
                "draft": engine.draft_decision, "rss_loaded_mib": rss_loaded, "rss_full_mib": resident_mib(),
                "peak_mib": peak_mib()}
    finally:
        engine.close()


def run(args) -> dict:
    path = args.target or str(registry.default_path(registry.DEFAULT_TARGET))
    threads = args.threads or 2
    print(f"kv-bench: {path}, {args.tokens} tokens per prompt, {threads} threads, best of {args.reps}",
          file=sys.stderr)
    full = full_store_figures(args.target, args.tokens)    # first: a process with nothing else loaded before
    snap = snapshot_figures(path, args.tokens, threads, args.reps)
    print(f"RAM snapshots: evaluating {snap['tokens']} tokens {snap['evaluate_s']:.1f} s; their state "
          f"{snap['state_mib']:.1f} MiB: save {snap['save_ms']:.1f} ms, restore {snap['restore_ms']:.1f} ms; "
          f"then decode 1 token {snap['decode1_ms']:.1f} ms, 64 tokens {snap['decode64_ms']:.0f} ms")
    rows = []
    for k in args.sequences:
        u = unified_figures(path, args.tokens, k, threads, args.reps)
        rows.append(u)
        print(f"unified cache, {k} sequences of {args.tokens} held ({u['kv_mib_reserved']:.0f} MiB reserved): "
              f"decode 1 token {u['decode1_ms']:.1f} ms, 64 tokens {u['decode64_ms']:.0f} ms, seq_cp "
              f"{u['seq_cp_ms']:.2f} ms")
    print(f"the engine with default settings: {full['rss_loaded_mib']:,.0f} MiB resident when loaded (draft "
          f"model {full['draft'].split(':')[0]}); its KV store filled to the budget of {full['budget_mib']:.0f} MiB "
          f"({full['states']} states, {full['held_mib']:.0f} MiB): {full['rss_full_mib']:,.0f} MiB resident "
          f"= {full['rss_full_mib'] * 2 ** 20 / 1e9:.2f} GB (target <= 2.5 GB), peak {full['peak_mib']:,.0f} MiB")
    return {"snapshot": snap, "unified": rows, "full_store": full}
