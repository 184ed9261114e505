"""One line was asked for and it opened a block, so its body came along: the completion ends where that block
does, with its closer, and not with the code the model wrote after it (that is the user's next line)."""
from .around import Around


def apply(completion: str, around: Around) -> str:
    if not around.block_of_line:
        return completion
    end = around.block_end(completion + "\n")
    return completion[:end] if 0 <= end < len(completion) else completion
