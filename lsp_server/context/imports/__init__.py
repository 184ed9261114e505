"""Import resolution: the files a document imports, found on disk under its workspace root, one module per
language (python, typescript, go, rust: each a `resolve`, see base), and the definitions reached through them.
Bounded: at most MAX_IMPORTED_FILES files per document; the files are read through files.ProjectFiles, so nothing
the Excluder refuses is opened."""
from .base import Import
from .reach import Candidate, candidates
from .resolve import MAX_IMPORTED_FILES, Project, project_for

__all__ = ["Candidate", "Import", "MAX_IMPORTED_FILES", "Project", "candidates", "project_for"]
