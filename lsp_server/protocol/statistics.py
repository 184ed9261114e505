"""tandem/stats (a request), tandem/didShow and tandem/didAccept (notifications), and the tandem.accepted
command that inline items carry, so an editor can report what the user took."""
from __future__ import annotations


from .completion import ACCEPT_COMMAND
from .server import TandemServer


def _get(params, key, default=None):
    if params is None:
        return default
    if isinstance(params, dict):
        return params.get(key, default)
    return getattr(params, key, default)


def _accepted(ls: TandemServer, params) -> None:
    ls.service.stats.accepted += 1
    chars = _get(params, "chars", 0)
    ls.service.stats.accepted_chars += chars if isinstance(chars, int) else 0


def register(server: TandemServer) -> None:
    @server.feature("tandem/stats")
    def stats(ls: TandemServer, params=None):
        out = ls.service.summary(include_records=bool(_get(params, "records", False)))
        out["ready"] = ls.service.ready
        out["load_error"] = ls.service.load_error
        out["settings"] = ls.settings.as_dict()
        if ls.service.pipeline is not None:
            eng = ls.service.pipeline.engine
            out["engine"] = {"target_evaluated": eng.target.counters.evaluated,
                             "target_reused": eng.target.counters.reused,
                             "warnings": list(eng.warnings)}
        return out

    @server.feature("tandem/didShow")
    def did_show(ls: TandemServer, params=None):
        pass   # `shown` is counted when a non-empty answer is sent; clients may still say it

    @server.feature("tandem/didAccept")
    def did_accept(ls: TandemServer, params=None):
        _accepted(ls, params)

    @server.command(ACCEPT_COMMAND)
    def accepted_command(ls: TandemServer, *args):
        _accepted(ls, args[0] if args else None)
