"""Between the editor protocol and the pipeline: settings, the typing-through cache, generation reuse,
supersede and warm-up, and statistics. Knows nothing of LSP, so the CLI and tests can drive it too."""
from .settings import Settings, SettingsError
from .scheduler import Answer, CompletionService

__all__ = ["Settings", "SettingsError", "Answer", "CompletionService"]
