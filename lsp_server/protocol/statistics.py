"""tandem/stats and tandem/document (requests: what the server holds), tandem/didShow, tandem/didAccept,
tandem/didPartiallyAccept and tandem/didDismiss (notifications), and the tandem.accepted command that inline items
carry, so an editor can report what the user took and let go."""
from __future__ import annotations
import hashlib

from pygls.exceptions import JsonRpcInvalidParams

from .completion import ACCEPT_COMMAND
from .server import TandemServer


def _get(params, key, default=None):
    if params is None:
        return default
    if isinstance(params, dict):
        return params.get(key, default)
    return getattr(params, key, default)


def _rss_mib() -> tuple[float | None, float | None]:
    """Resident memory now and at its peak (VmRSS, VmHWM), where /proc has them."""
    got = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    got[line[:5]] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return got.get("VmRSS"), got.get("VmHWM")


def _chars(params) -> int:
    chars = _get(params, "chars", 0)
    return chars if isinstance(chars, int) and not isinstance(chars, bool) and chars >= 0 else 0


def _accepted(ls: TandemServer, params) -> None:
    uri = _get(params, "uri")
    ls.service.count_accepted(_chars(params), uri if isinstance(uri, str) else None)


def register(server: TandemServer) -> None:
    @server.feature("tandem/stats")
    def stats(ls: TandemServer, params=None):
        out = ls.service.summary(include_records=bool(_get(params, "records", False)))
        out["ready"] = ls.service.ready
        out["load_error"] = ls.service.load_error
        # every setting in effect, its value and where it came from (default, a config file's path, editor)
        out["settings"] = [e.as_dict() for e in ls.layers.entries()]
        try:
            out["memory"]["open_documents"] = len(ls.workspace.text_documents)
        except RuntimeError:   # asked before initialize: no workspace yet
            out["memory"]["open_documents"] = 0
        out["memory"]["rss_mib"], out["memory"]["peak_rss_mib"] = _rss_mib()
        # handlers pygls is running (this request among them): requests and notifications in flight
        out["memory"]["handlers_in_flight"] = len(ls.protocol._request_futures)
        return out

    @server.feature("tandem/document")
    def document(ls: TandemServer, params=None):
        """The server's copy of a document, to check that it is in step with the editor's."""
        uri = _get(params, "uri")
        if not isinstance(uri, str) or uri not in ls.workspace.text_documents:
            raise JsonRpcInvalidParams(f"unknown document {uri!r}: it was not opened with textDocument/didOpen")
        doc = ls.workspace.get_text_document(uri)
        data = doc.source.encode("utf-8", errors="surrogatepass")
        out = {"uri": uri, "version": doc.version, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
               "refused": ls.refused.get(uri)}
        if _get(params, "text", False) is True:
            out["text"] = doc.source
        return out

    @server.feature("tandem/didShow")
    def did_show(ls: TandemServer, params=None):
        pass   # `shown` is counted when a non-empty answer is sent; clients may still say it

    @server.feature("tandem/didAccept")
    def did_accept(ls: TandemServer, params=None):
        _accepted(ls, params)

    @server.feature("tandem/didPartiallyAccept")
    def did_partially_accept(ls: TandemServer, params=None):
        """{"uri", "chars"}: the user took the next word or line of a suggestion (VS Code's accept next
        word / line); `accepted` still counts the suggestion if the rest is taken too."""
        ls.service.count_partly_accepted(_chars(params))

    @server.feature("tandem/didDismiss")
    def did_dismiss(ls: TandemServer, params=None):
        """{"uri"}: the user dismissed the suggestion shown (Esc); edits that type over one count by
        themselves."""
        uri = _get(params, "uri")
        ls.service.outcomes.dismissed(uri if isinstance(uri, str) else None)

    @server.command(ACCEPT_COMMAND)
    def accepted_command(ls: TandemServer, *args):
        _accepted(ls, args[0] if args else None)
