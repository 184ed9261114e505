"""FIM prompts from the vocabulary's own tokens, within token budgets."""
from .fim import Prompt, PromptBudget, PromptParts, build_prompt

__all__ = ["Prompt", "PromptBudget", "PromptParts", "build_prompt"]
