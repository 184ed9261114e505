"""The server's settings, each with its default and its check. Where they come from (defaults < the user's
config.toml < the workspace's tandem.toml < the editor) is layers.py. Keys are accepted in snake_case or camelCase
(the editors' settings are camelCase). The engine's defaults and checks are its own (engine/config.py,
engine/backend.py), read here: the engine cannot read Settings."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum

import pathspec

from ..engine.backend import BackendConfig, BackendError, BackendKind
from ..engine.config import IDLE_S, EngineConfig, EngineKind, GpuMode, check_draft_bounds
from ..engine.machine import offload_layers
from ..prompt import PromptBudget
from .gate import Suggestions


class SettingsError(ValueError):
    pass


# settings of the editor clients themselves, which may come along with the server's; `workspaceTrusted: false`
# (VS Code, in a workspace the user has not trusted) is the client's word that the workspace's tandem.toml is not
# to be read (lifecycle.py)
CLIENT_KEYS = {"server_path", "trace", "debounce_ms", "keymaps", "log_level", "workspace_trusted"}


MIN_PROMPT_TOKENS = 128

# the editors' language ids that differ from the server's language names: a document's language falls back to
# them, and the `languages` setting takes either spelling (VS Code's "typescriptreact" is the server's "tsx")
EDITOR_LANGUAGE_IDS = {"typescriptreact": "tsx", "javascriptreact": "javascript", "shellscript": "bash",
                       "golang": "go", "py": "python", "plaintext": "text"}


# the bounds of the size, count and time settings, from any layer: a value beyond them is a typo or a repository
# pinning the user's memory, cores or the engine's life, never a machine this runs on
BOUNDS = {
    "context_size": (512, 131072), "threads": (0, 512), "engine_idle_minutes": (1, 24 * 60),
    "kv_store_mib": (-1, 64 << 10), "max_file_bytes": (1, 256 << 20), "cache_reuse": (0, 4096),
    "draft_min": (0, 64), "draft_max": (0, 64), "max_tokens": (1, 4096), "max_tokens_single_line": (1, 1024),
    "time_budget_ms": (0, 600_000), "early_answer_ms": (0, 60_000), "early_line_ms": (0, 60_000),
    "prefix_tokens": (1, 131072), "suffix_tokens": (0, 131072), "suffix_tokens_in_block": (0, 131072),
    "suffix_tokens_at_rest": (0, 131072), "context_tokens": (0, 131072), "prompt_budget_ms": (-1, 60_000),
    "fast_prefix_tokens": (1, 131072), "fast_context_tokens": (0, 131072), "fast_below_tokens": (0, 131072),
    "fast_similar_tokens": (0, 131072), "warmup_pause_ms": (-1, 60_000), "backend_timeout_ms": (1, 600_000),
    "backend_max_in_flight": (1, 64),
}


@dataclass(frozen=True)
class Settings:
    # models (a change reloads them)
    target: str = ""                  # "" : the default target from the model cache
    draft: str = ""                   # "" : the default draft; "none": no draft model
    context_size: int = EngineConfig.n_ctx
    threads: int = EngineConfig.n_threads
    gpu: GpuMode = GpuMode.AUTO       # auto: both models on the GPU where the llama.cpp build has one
    drafters: tuple[str, ...] = EngineConfig.drafters
    # an inference server instead of the models in-process (docs/team-server.md); "" : in-process
    backend: str = ""                 # its URL
    backend_kind: BackendKind = BackendConfig.kind
    backend_model: str = BackendConfig.model               # openai: the model name ("" : the server's first)
    backend_api_key_env: str = BackendConfig.api_key_env   # the variable holding its API key (never the key)
    backend_timeout_ms: int = round(BackendConfig.timeout_s * 1000)
    backend_verify_tls: bool = BackendConfig.verify_tls
    backend_max_in_flight: int = BackendConfig.max_in_flight
    backend_vocab: str = BackendConfig.vocab   # a GGUF of the server model's family ("" : the default target's)
    # "shared": the models in one engine process for every window (started when none answers, gone after
    # engineIdleMinutes without a window); "local": in this server's process
    engine: EngineKind = EngineKind.SHARED
    engine_idle_minutes: int = round(IDLE_S / 60)
    # generation (takes effect on the next request)
    speculation: bool = EngineConfig.speculation
    draft_min: int = EngineConfig.draft_min
    draft_max: int = EngineConfig.draft_max
    # a block asked for: room for a long hole (at 96 tokens 20 % of the multi-line development set's answers were
    # cut, and 5 of 23 of those sampled failed for it alone); "line or block" places keep 96 (pipeline.py); in the
    # editor the time budget ends a generation first
    max_tokens: int = 256
    max_tokens_single_line: int = 40
    time_budget_ms: int = 1500        # generation stops after this and keeps what is whole
    early_answer_ms: int = 600        # after this much generation, answer with what is whole and go on
    # ...but a one-line answer whose line is still being written waits for its end up to this (at least
    # earlyAnswerMs): an unfinished line is a wrong first line
    early_line_ms: int = 1200
    # prompt budgets in tokens; the suffix is evaluated again on every keystroke, so it stays short
    prefix_tokens: int = 768          # a page: about 576 tokens of text above the cursor, and its outline
    suffix_tokens: int = 16           # evaluated again on every keystroke, so short...
    suffix_tokens_in_block: int = 64  # ...except where code of the cursor's own block follows it
    # ...and the page's where the user is not typing (the fill where the cursor stopped; 0: as above). It follows
    # the prefix, so after every edit it is evaluated again: no request waits for it (the fill evaluates it last
    # and keeps it whole, a request takes it only where cached: Pipeline.plan_typing), and the fast prompts keep
    # the typing suffix. Off by default: on the real-projects suite a long suffix at rest gained on one half and
    # lost on the other (docs/evaluation.md)
    suffix_tokens_at_rest: int = 0
    context_tokens: int = 512
    # latency on large files: a request whose uncached prompt would take longer than this to evaluate is
    # answered from a short prompt of the nearest lines (fastPrefixTokens) while its page fills (-1: never)
    prompt_budget_ms: int = 700
    fast_prefix_tokens: int = 96
    kv_store_mib: int = EngineConfig.kv_store_mib   # RAM for pages' and documents' KV states; -1: automatic
    cache_reuse: int = EngineConfig.cache_reuse     # >0: reuse cached runs of this many tokens at shifted positions
    # behaviour
    enabled: bool = True
    # how much ghost text is shown, from how sure the target is of it (service/gate.py): eager shows every
    # answer; balanced leaves out those unlikely to be taken; quiet only the surest
    suggestions: Suggestions = Suggestions.BALANCED
    languages: dict[str, bool] = field(default_factory=dict)   # {"markdown": false}; others on
    warmup_pause_ms: int = 100        # fill ahead (fill.py) after this much idle time after an edit or an answer
    prefetch: bool = True             # after a suggestion, generate the next one as if it were accepted
    # where a suggestion came from a fast prompt, generate the page's answer once the fill has it, and tell the
    # client (tandem/betterCompletion) where it differs, so it asks again (offer.py): on the real-projects suite
    # the offer's first lines are right more often than the fast prompt's, on both halves
    offer_better: bool = True
    # after an edit rests, propose the edit that follows it (textDocument/copilotInlineEdit, the code action)
    next_edit: bool = True
    max_file_bytes: int = 4 << 20
    # the files the document imports, read from the workspace on disk (never secrets, nor what .gitignore or
    # .tandemignore ignore), and recently edited and viewed code of other files go in the prompt. Off until it
    # pays: it costs typing about 0.3 s at the median on a 2-core CPU and has shown no gain on real holes yet
    project_context: bool = False
    # files never completed in nor read as context, gitignore patterns relative to the workspace root (a pattern
    # without "/" matches a file's name anywhere), beside the workspace's .tandemignore and the built-in list of
    # secret files (.env, keys, credentials), which no setting turns off
    exclude: tuple[str, ...] = ()
    # with projectContext, a fast prompt's room for the definitions from other files that its nearest lines use.
    # Off: cross-file holes are answered from the file's own uses of the name, not from its definition (on the
    # tune half's cross-file holes the definitions gained one hole in 36 at most)
    fast_context_tokens: int = 0
    # the code below the cursor's line in the fast prompt's head, where it stays while the user types (0: none).
    # It gains where there is time to evaluate it, and loses at an editor's pace on a 2-core CPU (the longer fast
    # prompt is not evaluated by the time the request comes). Off; for machines where prompts evaluate fast
    fast_below_tokens: int = 0
    # lines from elsewhere in the file like those above the cursor, in the fast prompt's head (context/similar.py):
    # the model alone copies the file's own patterns from there. At an editor's pace it gains first lines on both
    # halves of the real-projects suite, for 0.4-0.8 s more at p50 before the first ghost text at a new place on a
    # 2-core CPU
    fast_similar_tokens: int = 96

    MODEL_KEYS = ("target", "draft", "context_size", "threads", "gpu", "drafters",
                  "engine", "engine_idle_minutes",
                  "backend", "backend_kind", "backend_model", "backend_api_key_env", "backend_timeout_ms",
                  "backend_verify_tls", "backend_max_in_flight", "backend_vocab")
    # what a workspace's own tandem.toml may not set: it comes with a repository someone cloned, and must not send
    # the user's code elsewhere or make the server load files it brings
    USER_ONLY = ("target", "draft", "backend", "backend_kind", "backend_model", "backend_api_key_env",
                 "backend_verify_tls", "backend_vocab")

    def language_enabled(self, language: str) -> bool:
        if not self.enabled:
            return False
        if language in self.languages:
            return self.languages[language]
        for key, on in self.languages.items():
            if EDITOR_LANGUAGE_IDS.get(key) == language:
                return on
        return self.languages.get("*", True)

    def prompt_budget(self) -> PromptBudget:
        return PromptBudget(prefix_tokens=self.prefix_tokens, suffix_tokens=self.suffix_tokens,
                            context_tokens=self.context_tokens, suffix_in_block=self.suffix_tokens_in_block,
                            suffix_at_rest=self.suffix_tokens_at_rest,
                            near_tokens=self.fast_context_tokens if self.project_context else 0,
                            below_tokens=self.fast_below_tokens, similar_tokens=self.fast_similar_tokens)

    def engine_config(self) -> EngineConfig:
        layers = offload_layers(self.gpu)
        return EngineConfig(target_path=self.target or None, draft_path=self.draft or None,
                            n_ctx=self.context_size, n_threads=self.threads, n_gpu_layers=layers,
                            n_gpu_layers_draft=layers, draft_min=self.draft_min,
                            draft_max=self.draft_max, speculation=self.speculation, drafters=self.drafters,
                            kv_store_mib=self.kv_store_mib, cache_reuse=self.cache_reuse)

    def backend_config(self) -> BackendConfig | None:
        return self._backend() if self.backend else None

    def _backend(self) -> BackendConfig:
        return BackendConfig(url=self.backend, kind=self.backend_kind, model=self.backend_model,
                             api_key_env=self.backend_api_key_env, timeout_s=self.backend_timeout_ms / 1000,
                             verify_tls=self.backend_verify_tls, max_in_flight=self.backend_max_in_flight,
                             vocab=self.backend_vocab)

    def models_differ(self, other: "Settings") -> bool:
        return any(getattr(self, k) != getattr(other, k) for k in self.MODEL_KEYS)

    def merged(self, values: dict | None) -> "Settings":
        """These settings with `values` applied; unknown keys, wrong types and values out of bounds raise
        SettingsError."""
        if not values:
            return self
        if not isinstance(values, dict):
            raise SettingsError(f"settings must be an object, not {type(values).__name__}")
        changes = {}
        for key, value in values.items():
            name = _snake(key)
            if name not in CLIENT_KEYS:
                changes[name] = self.coerced(key, value)
        new = replace(self, **changes)
        new.check()
        return new

    def merged_each(self, values: dict) -> tuple["Settings", list[str], dict[str, str]]:
        """These settings with each of `values` that checks out applied, the others refused alone: the new
        settings, the keys applied and {key: why} for the keys refused. A value that only fits with another of the
        same values (draftMin beside a larger draftMax) is tried again once the others are in."""
        refused, wanted = {}, {}
        for key, value in values.items():
            if _snake(key) in CLIENT_KEYS:
                continue
            try:
                wanted[key] = self.coerced(key, value)
            except SettingsError as e:
                refused[key] = str(e)
        try:
            return self.merged(wanted), list(wanted), refused
        except SettingsError:
            pass
        settings, applied, pending = self, [], dict(wanted)
        while pending:
            progress = False
            for key in list(pending):
                try:
                    settings = settings.merged({key: pending[key]})
                except SettingsError as e:
                    refused[key] = str(e)
                    continue
                applied.append(key)
                refused.pop(key, None)
                del pending[key]
                progress = True
            if not progress:
                break
        return settings, applied, refused

    def coerced(self, key: str, value):
        """A value of setting `key` as the setting holds it (SettingsError: unknown, of the wrong type or out of
        its bounds)."""
        name = _snake(key)
        known = {f.name for f in fields(self)}
        if name not in known:
            raise SettingsError(f"unknown setting {key!r}; known: {', '.join(sorted(map(camel, known)))}")
        value = _coerce(name, value, getattr(self, name))
        _check_bounds(name, value)
        return value

    def check(self) -> None:
        try:
            check_draft_bounds(self.draft_min, self.draft_max)
            self._backend().check()
        except (ValueError, BackendError) as e:
            raise SettingsError(str(e)) from None
        for name in BOUNDS:
            _check_bounds(name, getattr(self, name))
        if self.engine not in list(EngineKind):
            raise SettingsError(f"engine {self.engine!r}: choose from {', '.join(EngineKind)}")
        for pattern in self.exclude:
            try:
                pathspec.GitIgnoreSpec.from_lines([pattern])
            except ValueError as e:   # pathspec's pattern errors are ValueErrors
                raise SettingsError(f"exclude: {pattern!r} is not a gitignore pattern ({e})") from None
        # prompt budgets larger than the context are shrunk to fit it (the server says so when the models
        # load); the completion itself, its drafts and a minimal prompt must fit
        need = self.max_tokens + self.draft_max + MIN_PROMPT_TOKENS
        if self.context_size < need:
            raise SettingsError(f"contextSize {self.context_size} is too small for maxTokens {self.max_tokens}: "
                                f"it needs maxTokens + draftMax + {MIN_PROMPT_TOKENS} = {need} tokens")

    def as_dict(self) -> dict:
        return asdict(self)


def _snake(key: str) -> str:
    # `kvStoreMiB` (as the README and the editors spell it) is kv_store_mib, not kv_store_mi_b
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key.replace("MiB", "Mib")).lower()


def camel(name: str) -> str:
    """A setting's name as the editors spell it: kv_store_mib -> kvStoreMiB."""
    first, *rest = name.split("_")
    return first + "".join("MiB" if w == "mib" else w.capitalize() for w in rest)


def plain(value):
    """A setting's value as JSON and TOML write it."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _check_bounds(name: str, value) -> None:
    if name in BOUNDS and not BOUNDS[name][0] <= value <= BOUNDS[name][1]:
        lo, hi = BOUNDS[name]
        raise SettingsError(f"setting {camel(name)} {value}: out of its bounds, {lo} to {hi}")


def _coerce(name: str, value, current):
    if isinstance(current, Enum):
        kinds = type(current)
        if isinstance(value, str) and value in list(kinds):
            return kinds(value)
        raise SettingsError(f"setting {camel(name)} {value!r}: choose from {', '.join(kinds)}")
    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(current, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():   # 2.0: JSON's and TOML's spelling of 2
            return int(value)
        if isinstance(value, float):
            raise SettingsError(f"setting {camel(name)}: expected a whole number, got {value!r}")
    elif isinstance(current, str):
        if isinstance(value, str):
            return value
    elif isinstance(current, tuple):
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif isinstance(current, dict):
        if isinstance(value, dict) and all(isinstance(v, bool) for v in value.values()):
            return dict(value)
    raise SettingsError(f"setting {camel(name)}: expected {type(current).__name__}, got {value!r}")
