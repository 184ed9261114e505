"""Models, drafters, the speculative loop and the controller. Knows nothing of LSP or tree-sitter."""
from .backend import BackendConfig, BackendKind
from .cancel import Cancel, Cancelled
from .config import IDLE_S, DraftResidency, EngineConfig, EngineKind
from .engine import LocalEngine
from .gguf import ModelFileError
from .interface import Engine
from .llama import ContextFullError, shared_prefix
from .speculative import CUT_SHORT, ENDS_HOLE, Generation, GenerationRequest, StepObserver, StopReason


def make_engine(cfg: EngineConfig, backend: BackendConfig | None = None, log=None,
                kind: EngineKind = EngineKind.LOCAL, idle_s: float = IDLE_S) -> Engine:
    """The engine in this process (`kind` local); the remote one where a backend is given (the local models are
    not loaded then); with `kind` shared, the engine process every window uses (started if none answers; it
    exits after `idle_s` without a window)."""
    kw = {"log": log} if log is not None else {}
    if backend is not None:
        from .remote import RemoteEngine
        return RemoteEngine(backend, cfg, **kw)
    if EngineKind(kind) == EngineKind.SHARED:
        from .shared import SharedEngine
        return SharedEngine(cfg, idle_s=idle_s, **kw)
    return LocalEngine(cfg, **kw)

__all__ = ["BackendConfig", "BackendKind", "Cancel", "Cancelled", "ContextFullError", "CUT_SHORT", "DraftResidency",
           "ENDS_HOLE", "Engine", "EngineConfig", "EngineKind", "Generation", "GenerationRequest", "IDLE_S",
           "LocalEngine", "make_engine", "ModelFileError", "shared_prefix", "StepObserver", "StopReason"]
