"""Documents and what surrounds the cursor."""
from .document import Document, DocumentError, language_for_path

__all__ = ["Document", "DocumentError", "language_for_path"]
