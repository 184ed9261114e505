"""FIM prompts from the vocabulary's own tokens, within token budgets, their prefixes starting at page
boundaries that cached states can serve."""
from .fim import Prompt, PromptBudget, PromptKind, PromptParts, build_fast_prompt, build_prompt, near_fills

__all__ = ["Prompt", "PromptBudget", "PromptKind", "PromptParts", "build_fast_prompt", "build_prompt", "near_fills"]
