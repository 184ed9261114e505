"""What travels between a window's server and the engine process: one JSON object per line. A request has an
`id` and an `op`; the host answers with events of the same id (`text`, `prompt`, `goes_on`) and ends with
`done` (`result`) or `error` (`message`, `kind`)."""
from __future__ import annotations

import json
from dataclasses import asdict, fields

from ..speculative import DrafterCount, Generation, GenerationRequest, StopReason

# the request's plain fields (its callbacks travel as flags: the host sends events back instead)
REQUEST_FIELDS = tuple(f.name for f in fields(GenerationRequest)
                       if f.name not in ("on_text", "on_prompt", "goes_on", "observer"))


def dumps(msg: dict) -> bytes:
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode("utf-8")


def loads(line: bytes) -> dict:
    msg = json.loads(line)
    if not isinstance(msg, dict):
        raise ValueError("a message is a JSON object")
    return msg


def request_to_dict(req: GenerationRequest) -> dict:
    out = {name: getattr(req, name) for name in REQUEST_FIELDS}
    out["stop"] = list(req.stop)
    out["callbacks"] = [n for n in ("on_text", "on_prompt", "goes_on") if getattr(req, n) is not None]
    return out


def request_from_dict(d: dict) -> tuple[GenerationRequest, list[str]]:
    kw = {name: d[name] for name in REQUEST_FIELDS if name in d}
    kw["stop"] = tuple(kw.get("stop", ()))
    return GenerationRequest(**kw), list(d.get("callbacks", ()))


def generation_to_dict(g: Generation) -> dict:
    d = asdict(g)
    d["stop_reason"] = str(g.stop_reason)
    return d


def generation_from_dict(d: dict) -> Generation:
    d = dict(d)
    d["stop_reason"] = StopReason(d["stop_reason"])
    d["drafters"] = {k: DrafterCount(**v) for k, v in d.get("drafters", {}).items()}
    d["verify_s"] = {int(k): v for k, v in d.get("verify_s", {}).items()}   # JSON keys are strings
    return Generation(**d)
