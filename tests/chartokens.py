"""A tokenizer of one token per character, with FIM tokens below zero: prompts whose layout a test reads back."""
from lsp_server.engine.vocab import FimTokens


class CharTokenizer:
    fim = FimTokens(prefix=-1, suffix=-2, middle=-3, repo_name=-4, file_sep=-5)

    def tokenize(self, text):
        return [ord(c) for c in text]


def head_of(tokens: list[int]) -> str:
    """The prompt's head (what comes before the prefix token), its FIM tokens named."""
    names = {-4: "<|repo_name|>", -5: "<|file_sep|>"}
    return "".join(names.get(t, chr(t) if t >= 0 else "?") for t in tokens[:tokens.index(-1)])
