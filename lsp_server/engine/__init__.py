"""Models, drafters, the speculative loop and the controller. Knows nothing of LSP or tree-sitter."""
from .engine import Engine, EngineConfig
from .gguf import ModelFileError
from .cancel import Cancel, Cancelled
from .llama import ContextFullError, shared_prefix
from .speculative import CUT_SHORT, ENDS_HOLE, Generation, GenerationRequest, StepObserver, StopReason


def make_engine(cfg: EngineConfig, backend=None, log=None, shared: bool = False, idle_s: float = 600.0):
    """The in-process engine; the remote one where a backend (remote.BackendConfig) is given (the local models
    are not loaded then); with `shared`, the engine process every window uses (started if none answers; it
    exits after `idle_s` without a window)."""
    kw = {"log": log} if log is not None else {}
    if backend is not None:
        from .remote import RemoteEngine
        return RemoteEngine(backend, cfg, **kw)
    if shared:
        from .shared import SharedEngine
        return SharedEngine(cfg, idle_s=idle_s, **kw)
    return Engine(cfg, **kw)

__all__ = ["Engine", "EngineConfig", "ModelFileError", "Cancel", "Cancelled", "ContextFullError", "Generation",
           "GenerationRequest", "make_engine", "shared_prefix", "StepObserver", "StopReason", "ENDS_HOLE", "CUT_SHORT"]
