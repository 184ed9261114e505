"""Drafters propose tokens for the target to verify: free ones (lookup in the context) and the draft model."""
from .base import Draft
from .ngram import NgramDrafter
from .model import ModelDrafter
from .rewrite import RewriteDrafter
from .template import TemplateDrafter

__all__ = ["Draft", "NgramDrafter", "ModelDrafter", "TemplateDrafter", "RewriteDrafter"]
