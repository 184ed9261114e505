"""Models, drafters, the speculative loop and the controller. Knows nothing of LSP or tree-sitter."""
from .engine import Engine, EngineConfig
from .gguf import ModelFileError
from .llama import Cancel, Cancelled, ContextFullError, shared_prefix
from .speculative import Generation, GenerationRequest

__all__ = ["Engine", "EngineConfig", "ModelFileError", "Cancel", "Cancelled", "ContextFullError", "Generation",
           "GenerationRequest", "shared_prefix"]
