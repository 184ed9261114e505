from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Draft:
    """Tokens proposed to continue the context, each with the statistics bucket its acceptance counts in."""
    drafter: str
    tokens: list[int] = field(default_factory=list)
    buckets: list[str] = field(default_factory=list)
    cost_s: float = 0.0   # what proposing it cost (the model drafter's decode time)
