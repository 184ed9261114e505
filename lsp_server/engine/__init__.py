"""Models, drafters, the speculative loop and the controller. Knows nothing of LSP or tree-sitter."""
from .engine import Engine, EngineConfig
from .gguf import ModelFileError
from .llama import Cancel, Cancelled, ContextFullError, shared_prefix
from .speculative import CUT_SHORT, ENDS_HOLE, Generation, GenerationRequest, StopReason


def make_engine(cfg: EngineConfig, backend=None, log=None):
    """The in-process engine, or the remote one where a backend (remote.BackendConfig) is given: the local
    models are not loaded then."""
    kw = {"log": log} if log is not None else {}
    if backend is not None:
        from .remote import RemoteEngine
        return RemoteEngine(backend, cfg, **kw)
    return Engine(cfg, **kw)

__all__ = ["Engine", "EngineConfig", "ModelFileError", "Cancel", "Cancelled", "ContextFullError", "Generation",
           "GenerationRequest", "make_engine", "shared_prefix", "StopReason", "ENDS_HOLE", "CUT_SHORT"]
