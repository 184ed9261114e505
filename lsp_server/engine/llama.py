"""One llama.cpp model with its own context, driven through the low-level bindings.

The object remembers which tokens its KV cache holds (sequence 0, positions 0..n-1), so a new prompt only
evaluates what follows the first difference, and a rejected draft is rolled back by position. With a KV store,
the start of a prompt worth keeping (`keep`) is copied out before another prompt overwrites it, and a later
prompt that shares more with a stored state than with the live cache gets that state back first.
"""
from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from typing import Callable
import numpy as np

import llama_cpp

from .cancel import Cancelled, kept, stops_at
from .config import EngineConfig
from .gguf import ModelFileError
from .kvstore import KVStore, Snapshot

_backend_lock = threading.Lock()
_backend_ready = False


def _init_backend() -> None:
    global _backend_ready
    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            # llama.cpp logs every tensor to stderr; keep our stderr for messages a user can act on.
            llama_cpp.llama_log_set(_silent_log, ctypes.c_void_p(0))
            _backend_ready = True


# llama.cpp's recent error lines, quoted when a load fails (it prints every tensor otherwise).
recent_errors: list[str] = []


@llama_cpp.llama_log_callback
def _silent_log(level, text, user_data):  # pragma: no cover - called from C
    if level == 4:  # GGML_LOG_LEVEL_ERROR
        recent_errors.append(text.decode("utf-8", "replace").strip())
        del recent_errors[:-5]


ggml_no_abort = ctypes.cast(None, llama_cpp.ggml_abort_callback)


PREFILL_CHUNK = 64    # a cancel also stops a chunk mid-way (llama.cpp's abort callback); chunks this size
                     # evaluate ~20 % faster than 32-token ones on 2 CPU cores


class ContextFullError(Exception):
    """The tokens do not fit the context window."""


@dataclass
class ModelCounters:
    evaluated: int = 0      # tokens whose KV this model computed
    reused: int = 0         # prompt tokens served from the KV cache instead (live or restored)
    restored: int = 0       # of those, tokens whose state came back from the KV store
    shifted: int = 0        # of those, tokens reused at another position (reuse with a position shift)
    decode_calls: int = 0


# a stored state is brought back only when it holds more of the prompt than the live cache by this many
# tokens: a restore costs ~4 ms, evaluating a token ~11 ms here
RESTORE_GAIN = 4


def _file_state(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class Vocabulary:
    """The token methods of a loaded model (`self.vocab`): a model with weights, or a vocabulary alone."""
    vocab: object
    _pieces: dict[int, bytes]

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        data = text.encode("utf-8")
        n_max = len(data) + 8
        buf = (llama_cpp.llama_token * n_max)()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, n_max, False, special)
        if n < 0:
            buf = (llama_cpp.llama_token * -n)()
            n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, -n, False, special)
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        p = self._pieces.get(token)
        if p is None:
            buf = ctypes.create_string_buffer(64)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 64, 0, False)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, False)
            p = self._pieces[token] = buf.raw[:n]
        return p

    def detokenize(self, tokens: list[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", errors="replace")

    def token_text(self, token: int) -> str:
        t = llama_cpp.llama_vocab_get_text(self.vocab, token)
        return t.decode("utf-8", errors="replace") if t else ""

    def is_eog(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))



class VocabularyFile(Vocabulary):
    """A GGUF file's vocabulary without its weights (a few MiB): the tokens of a model that runs elsewhere
    (the remote engine counts and builds its prompts with them)."""

    def __init__(self, path: str):
        _init_backend()
        self.path = path
        mp = llama_cpp.llama_model_default_params()
        mp.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise ModelFileError(f"{path}: llama.cpp could not read a vocabulary from this file: "
                                 + ("; ".join(recent_errors[-3:]) or "no reason given"))
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self._pieces = {}

    def close(self) -> None:
        if self.model:
            llama_cpp.llama_model_free(self.model)
            self.model = None


class LlamaModel(Vocabulary):
    def __init__(self, path: str, *, n_ctx: int = EngineConfig.n_ctx, n_batch: int = 512, n_threads: int = 2,
                 n_gpu_layers: int = 0, name: str = "model"):
        _init_backend()
        self.path, self.name, self.n_ctx, self.n_batch = path, name, n_ctx, n_batch
        self.file_state = _file_state(path)
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = n_gpu_layers
        # read the weights into memory instead of mapping the file: a mapped file that is truncated or replaced
        # while the server runs kills it with SIGBUS at the next page it touches; read, it only costs the same
        # resident memory the mapping would (and a second or two to load)
        mp.load_mode = llama_cpp.LLAMA_LOAD_MODE_NONE
        self.model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise ModelFileError(f"{path}: llama.cpp could not load this model file: "
                                 + ("; ".join(recent_errors[-3:]) or "no reason given"))
        self._weights_of: LlamaModel | None = None   # None: these weights are this object's own
        self.n_threads = n_threads
        try:
            self._open_context()
        except ModelFileError:
            llama_cpp.llama_model_free(self.model)
            raise
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)

    def another_context(self) -> LlamaModel:
        """A second context (its own KV cache, tokens and batch) on these same weights in memory. Two copies of
        the weights run 1-2 % apart on this host (where each landed in memory), so paths compared side by side
        share one. Close it before the model it came from."""
        twin = object.__new__(LlamaModel)
        for k in ("path", "name", "n_ctx", "n_batch", "file_state", "model", "vocab", "n_vocab", "n_threads"):
            setattr(twin, k, getattr(self, k))
        twin._weights_of = self
        twin._open_context()
        return twin

    def _open_context(self) -> None:
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = self.n_ctx
        cp.n_batch = self.n_batch
        cp.n_ubatch = self.n_batch
        cp.n_seq_max = 1
        cp.n_threads = self.n_threads
        cp.n_threads_batch = self.n_threads
        cp.no_perf = True
        self.ctx = llama_cpp.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise ModelFileError(f"{self.path}: llama.cpp could not create a context (n_ctx={self.n_ctx})")
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        # a cancellable decode installs this so llama.cpp stops between graph nodes, not after the whole batch;
        # the reference is kept because llama.cpp holds only the C pointer
        self._abort_on: threading.Event | None = None
        self._abort_end = 0
        self._abort_cb = llama_cpp.ggml_abort_callback(
            lambda _data: bool(self._abort_on is not None and stops_at(self._abort_on, self._abort_end)))
        self.batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self.tokens: list[int] = []
        self.counters = ModelCounters()
        self._pieces: dict[int, bytes] = {}
        self.store: KVStore | None = None
        self.keep = 0   # how many of the live tokens are worth a snapshot before something overwrites them
        self.runs_on: Callable | None = None   # None: llama_decode on the calling thread (`_llama_decode`)
        # >0: after the common start, runs of at least this many cached tokens that come later in the prompt are
        # moved to their new positions instead of evaluated again (llama-server's --cache-reuse); not
        # bit-identical to a fresh evaluation: their keys and values were computed with the tokens now removed
        self.reuse_min = 0

    # -- KV cache -----------------------------------------------------------------------------------
    def truncate(self, n: int) -> None:
        """Forget every cached token from position n on."""
        if n < len(self.tokens):
            llama_cpp.llama_memory_seq_rm(self.mem, 0, n, -1)
            del self.tokens[n:]
        self.keep = min(self.keep, n)

    def reset(self) -> None:
        llama_cpp.llama_memory_clear(self.mem, True)
        self.tokens = []
        self.keep = 0

    def kv_bytes_per_token(self) -> int:
        """f16 keys and values of every layer (what one token of a stored state costs)."""
        m = self.model
        n_head, n_head_kv = llama_cpp.llama_model_n_head(m), llama_cpp.llama_model_n_head_kv(m)
        head_dim = llama_cpp.llama_model_n_embd(m) // max(1, n_head)
        return llama_cpp.llama_model_n_layer(m) * 2 * n_head_kv * head_dim * 2

    def save(self) -> Snapshot | None:
        """Copy the kept start of the live cache into the store (unless it is there already)."""
        if self.store is None or self.keep <= 0 or self.store.covers(self.tokens[:self.keep]):
            return None
        self.truncate(self.keep)
        size = llama_cpp.llama_state_seq_get_size(self.ctx, 0)
        blob = np.empty(size, dtype=np.uint8)
        n = llama_cpp.llama_state_seq_get_data(self.ctx, blob.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)),
                                               size, 0)
        if n == 0:
            return None
        return self.store.add(self.tokens, blob[:n])

    def restore(self, snap: Snapshot) -> bool:
        """Make the live cache hold a stored state; False (and an empty cache) if llama.cpp refuses it."""
        n = llama_cpp.llama_state_seq_set_data(
            self.ctx, snap.blob.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), snap.nbytes, 0)
        if n == 0:
            self.store.drop(snap)
            self.reset()
            return False
        self.tokens = snap.tokens.tolist()
        self.keep = 0   # it is in the store already
        self.store.touch(snap)
        self.store.counters.restores += 1
        self.store.counters.restored_tokens += len(self.tokens)
        return True

    def cached_prefix(self, tokens: list[int]) -> int:
        """How many leading tokens of a prompt the live cache or the store could serve without evaluating."""
        live = self.common_prefix(tokens)
        if self.store is None:
            return live
        return max(live, self.store.best(tokens)[1])

    def decode(self, tokens: list[int], all_logits: bool = False, cancel=None) -> None:
        """Append tokens to the cache; logits for every row (verification) or only the last one."""
        if not tokens:
            return
        if len(self.tokens) + len(tokens) > self.n_ctx:
            raise ContextFullError(
                f"{self.name}: {len(self.tokens) + len(tokens)} tokens do not fit the context of {self.n_ctx}")
        if all_logits and len(tokens) > self.n_batch:
            raise ValueError("a verify batch larger than n_batch")
        step = self.n_batch if cancel is None else min(self.n_batch, PREFILL_CHUNK)
        for start in range(0, len(tokens), step):
            chunk = tokens[start:start + step]
            trimmed = False
            if cancel is not None and stops_at(cancel, len(self.tokens) + len(chunk)):
                room = kept(cancel) - len(self.tokens)
                if room <= 0:
                    raise Cancelled()
                chunk, trimmed = chunk[:room], True   # only what the replacing prompt shares, then stop
            last_chunk = start + step >= len(tokens)
            pos0 = len(self.tokens)
            self._fill_batch(chunk, pos0, all_logits, last_chunk)
            if cancel is not None:
                self._abort_on, self._abort_end = cancel, pos0 + len(chunk)
                llama_cpp.llama_set_abort_callback(self.ctx, self._abort_cb, None)
                try:
                    rc = self._llama_decode()
                finally:
                    llama_cpp.llama_set_abort_callback(self.ctx, ggml_no_abort, None)
                    self._abort_on = None
                if rc == 2 and cancel.is_set():   # aborted: llama.cpp dropped this chunk's positions
                    llama_cpp.llama_memory_seq_rm(self.mem, 0, pos0, -1)
                    self._decode_kept(chunk, pos0, kept(cancel) - pos0)
                    raise Cancelled()
            else:
                rc = self._llama_decode()
            if rc != 0:
                # the failed batch may have left partial state: drop it so our bookkeeping stays true
                llama_cpp.llama_memory_seq_rm(self.mem, 0, pos0, -1)
                raise RuntimeError(f"{self.name}: llama_decode failed with code {rc}")
            self._evaluated(chunk)
            if trimmed:
                raise Cancelled()

    def _llama_decode(self) -> int:
        """llama_decode of the filled batch, on the thread `runs_on` hands it to where one is set. llama.cpp runs
        a batch on an OpenMP team of the calling thread; once a second thread has decoded, every decode in the
        process ran 40-70 % slower on a 2-core machine (docs/server.md), so a caller with several threads of
        its own (the bench's side-by-side paths) sends every decode to one."""
        if self.runs_on is None:
            return llama_cpp.llama_decode(self.ctx, self.batch)
        return self.runs_on(llama_cpp.llama_decode, self.ctx, self.batch)

    def _fill_batch(self, chunk: list[int], pos0: int, all_logits: bool, last: bool) -> None:
        """The batch for `chunk` at positions from `pos0`: logits for every row, or for the last row of the
        last chunk only."""
        b = self.batch
        for i, t in enumerate(chunk):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if (all_logits or (last and i == len(chunk) - 1)) else 0
        b.n_tokens = len(chunk)

    def _evaluated(self, chunk: list[int]) -> None:
        self.tokens.extend(chunk)
        self.counters.evaluated += len(chunk)
        self.counters.decode_calls += 1

    def _decode_kept(self, chunk: list[int], pos0: int, room: int) -> None:
        """After an abort mid-chunk: the chunk's start that the replacing prompt shares is evaluated after all
        (that prompt would evaluate it next; without this, a cancel between keystrokes that lands in a chunk
        loses the whole chunk, and a prompt cancelled at every keystroke never gets further)."""
        if room <= 0:
            return
        part = chunk[:room]
        self._fill_batch(part, pos0, False, True)
        if self._llama_decode() != 0:
            llama_cpp.llama_memory_seq_rm(self.mem, 0, pos0, -1)
            return
        self._evaluated(part)

    def logits(self, row: int = -1) -> np.ndarray:
        """A view of the logits at a position of the last decoded batch (-1: its last output row);
        valid until the next decode."""
        ptr = llama_cpp.llama_get_logits_ith(self.ctx, row)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def common_prefix(self, tokens: list[int]) -> int:
        """How many of these tokens the cache already holds, from the start."""
        return shared_prefix(self.tokens, tokens)

    def prefill(self, tokens: list[int], cancel=None, keep: int = 0) -> int:
        """Make the cache hold exactly `tokens` with logits for the last one; returns tokens reused. The first
        `keep` tokens are worth storing when a later prompt overwrites them."""
        if not tokens:
            raise ValueError("empty prompt")
        live = self.common_prefix(tokens)
        snap, stored = self.store.best(tokens) if self.store is not None else (None, 0)
        use = snap is not None and stored >= live + RESTORE_GAIN
        if use or self.keep > min(live, len(tokens) - 1):
            self.save()
        restored = 0
        if use and self.restore(snap):
            live = restored = stored
        p = min(live, len(tokens) - 1)  # the last token is always decoded again: we need its logits
        shifted = 0
        if self.reuse_min > 0 and p < len(self.tokens) and len(tokens) - 1 - p >= self.reuse_min \
                and llama_cpp.llama_memory_can_shift(self.mem):
            shifted = self._reuse_shifted(tokens, p) - p
        else:
            self.truncate(p)
        self.counters.reused += p + shifted
        self.counters.restored += min(restored, p)
        self.counters.shifted += shifted
        p += shifted
        try:
            self.decode(tokens[p:], cancel=cancel)
        finally:
            self.keep = min(keep, len(self.tokens))
        return p

    def _reuse_shifted(self, tokens: list[int], p: int) -> int:
        """Keep the cache's first p tokens, then every run of at least `reuse_min` cached tokens that the prompt
        has next (with what lies between them in the cache dropped), shifted into place; returns how many
        leading prompt tokens the cache holds afterwards."""
        cache, limit = self.tokens, len(tokens) - 1
        head_c = head_p = p
        while head_c < len(cache) and head_p < limit:
            n = 0
            while head_c + n < len(cache) and head_p + n < limit and cache[head_c + n] == tokens[head_p + n]:
                n += 1
            if n >= self.reuse_min:
                if head_c != head_p:
                    llama_cpp.llama_memory_seq_rm(self.mem, 0, head_p, head_c)
                    llama_cpp.llama_memory_seq_add(self.mem, 0, head_c, head_c + n, head_p - head_c)
                head_c += n
                head_p += n
            else:
                head_c += 1
        llama_cpp.llama_memory_seq_rm(self.mem, 0, head_p, -1)
        self.tokens = list(tokens[:head_p])
        self.keep = min(self.keep, head_p)
        return head_p

    def file_change(self) -> str | None:
        """How the model file changed on disk since it was loaded (deleted, replaced, truncated), or None."""
        now = _file_state(self.path)
        if now == self.file_state:
            return None
        if now is None:
            return "was deleted"
        if now[0] != self.file_state[0]:
            return "was replaced by another file"
        if now[1] < self.file_state[1]:
            return f"was truncated ({now[1]:,} of {self.file_state[1]:,} bytes left)"
        return "was modified"

    def close(self) -> None:
        if getattr(self, "ctx", None):
            llama_cpp.llama_batch_free(self.batch)
            llama_cpp.llama_free(self.ctx)
            if self._weights_of is None:
                llama_cpp.llama_model_free(self.model)
            self.ctx = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def shared_prefix(a: list[int], b: list[int]) -> int:
    """The length of the common start of two token lists."""
    n = min(len(a), len(b))
    if not n:
        return 0
    # compare in numpy: prompts are thousands of tokens long and this runs on every request
    diff = np.flatnonzero(np.asarray(a[:n], dtype=np.int64) != np.asarray(b[:n], dtype=np.int64))
    return int(diff[0]) if diff.size else n


def top2(logits: np.ndarray) -> tuple[int, float]:
    """The argmax and its margin over the runner-up (how close a tie the greedy choice was)."""
    best = int(np.argmax(logits))
    v = float(logits[best])
    logits[best] = -np.inf          # two argmax passes are ~20x cheaper than a partition
    second = float(logits[int(np.argmax(logits))])
    logits[best] = v
    return best, v - second
