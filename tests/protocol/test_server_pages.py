"""Real-size files through the real server over stdio: a far jump is answered at once from a short prompt, the
page fills behind it while the user is idle (and its own answer is offered where it differs), a jump inside the
page then evaluates only the cursor's line and what follows, a request pre-empts the fill within one chunk, and
the KV store stays within its budget."""
from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient


from conftest import FIXTURES
from lsp_helpers import SERVER, inline, open_doc, setting, start, stats, type_text, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.models]
REAL = FIXTURES / "real"
# the block limit of the 2026-12-01 settings: these tests are about pages, not about how long a block may grow
OPTIONS = {"timeBudgetMs": 30000, "earlyAnswerMs": 0, "warmupPauseMs": 100, "maxTokens": 96,
           "suffixTokensAtRest": 256}   # the page's suffix at rest (off by default) is tested here


# a line of httpx_models.py far from the other tests' places (its page is not cached when the test jumps there)
OFFER_LINE = 303


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, OPTIONS, root=REAL)
    s = await wait_ready(lsp_client)
    assert s["ready"], s["load_error"]
    lsp_client.versions = {}
    yield
    await lsp_client.shutdown_session()


def empty_line(client, uri: str, text: str, line: int) -> tuple[str, types.Position]:
    """Empty a 1-based line to its indentation, as a user about to rewrite it; the text and the cursor."""
    lines = text.split("\n")
    old = lines[line - 1]
    indent = old[:len(old) - len(old.lstrip())]
    version = client.versions[uri] = client.versions.get(uri, 1) + 1
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line - 1, character=len(indent)),
                              end=types.Position(line=line - 1, character=len(old))), text="")]))
    lines[line - 1] = indent
    return "\n".join(lines), types.Position(line=line - 1, character=len(indent))


def put_back(client, uri: str, text: str, line: int, original: str) -> str:
    lines = text.split("\n")
    indent = lines[line - 1]
    version = client.versions[uri] = client.versions.get(uri, 1) + 1
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line - 1, character=len(indent)),
                              end=types.Position(line=line - 1, character=len(indent))),
            text=original.split("\n")[line - 1][len(indent):])]))
    lines[line - 1] = original.split("\n")[line - 1]
    return "\n".join(lines)


async def last_record(client) -> dict:
    return (await stats(client, records=True))["records"][-1]


async def idle(client, timeout: float = 240) -> dict:
    """Wait until the fill has nothing left to do (or the timeout)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        s = await stats(client)
        if s["fill"]["running"] is None and s["model"]["running"] == 0 and s["fill"]["tokens"]["page"] > 0:
            await asyncio.sleep(0.5)
            s2 = await stats(client)
            if s2["fill"]["running"] is None and s2["fill"]["tokens"] == s["fill"]["tokens"]:
                return s2
        await asyncio.sleep(0.25)
    raise TimeoutError("the fill did not finish")


async def test_a_far_jump_answers_fast_then_the_page_serves_jumps_inside_it(client: LanguageClient):
    path = REAL / "pflag_flag.go"
    uri, original = open_doc(client, path)
    text, pos = empty_line(client, uri, original, 999)
    await asyncio.sleep(0.3)
    await inline(client, uri, pos)
    far = await last_record(client)
    # nothing of this page is cached yet: a short prompt of the nearest lines answers now (the quick one, or the
    # one twice as long where the fill has evaluated most of it), far shorter than the page
    assert far["source"] == "fast", far
    assert far["prompt_tokens"] < 400, far
    text = put_back(client, uri, text, 999, original)
    s = await idle(client)
    assert s["fill"]["tokens"]["page"] > 500
    for line in (1003, 995):
        text, pos = empty_line(client, uri, text, line)
        await asyncio.sleep(0.2)
        await inline(client, uri, pos)
        rec = await last_record(client)
        text = put_back(client, uri, text, line, original)
        # the page's state serves the request: only the cursor's segment, the suffix and the FIM tokens are new
        assert rec["source"] == "model", rec
        # (a request at rest: up to suffixTokensAtRest of the code below too)
        assert rec["prompt_tokens"] > 300 and rec["prompt_evaluated"] <= 120 + OPTIONS["suffixTokensAtRest"], rec
    mem = (await stats(client))["memory"]["kv_store"]
    assert 0 < mem["bytes"] <= mem["budget_bytes"]
    assert mem["target"]["entries"] <= mem["target"]["max_entries"]


async def test_where_the_cursor_rests_the_page_with_the_code_below_answers(client: LanguageClient):
    """At rest the page's prompt has a longer suffix (suffixTokensAtRest): the fill evaluates it where the cursor
    stopped and keeps all of it while it fills the neighbouring pages, so a request there evaluates almost
    nothing and its prompt holds more of the code below than a request while typing."""
    path = REAL / "pflag_flag.go"
    uri, text = open_doc(client, path, uri=(REAL / "flag_at_rest.go").as_uri())
    text, pos = empty_line(client, uri, text, 642)
    await asyncio.sleep(0.3)
    await inline(client, uri, pos)   # a first answer here: the typing cache holds it
    before = (await stats(client))["fill"]["tokens"]["prompt"]
    s = await idle(client)
    assert s["fill"]["tokens"]["prompt"] > before, s["fill"]
    # the window's cache forgets the first answer (closed and opened again); the KV store keeps the fill's work
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    open_doc(client, path, text, uri=uri)
    client.versions[uri] = 1
    await asyncio.sleep(0.6)
    await inline(client, uri, pos)
    rest = await last_record(client)
    assert rest["source"] == "model" and rest["prompt_evaluated"] <= 2, rest
    # a keystroke at once: typing, the short suffix
    client.versions[uri] += 1
    type_text(client, uri, client.versions[uri], pos, "zq")
    await inline(client, uri, types.Position(line=pos.line, character=pos.character + 2))
    typing = await last_record(client)
    assert typing["prompt_tokens"] + 100 <= rest["prompt_tokens"], (typing, rest)


async def test_a_request_pre_empts_the_fill_within_one_chunk(client: LanguageClient):
    path = REAL / "httpx_models.py"
    uri, original = open_doc(client, path)
    text, pos = empty_line(client, uri, original, 901)
    t0 = time.monotonic()
    while (await stats(client))["fill"]["running"] not in ("page", "fast", "next"):
        assert time.monotonic() - t0 < 60, "no fill started"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)   # well inside a chunk of the fill
    other = REAL / "queryObserver.ts"
    ouri, otext = open_doc(client, other)
    _, opos = empty_line(client, ouri, otext, 421)
    await inline(client, ouri, opos)
    rec = await last_record(client)
    s = await stats(client)
    chunk_s = 64 / s["memory"]["kv_store"]["prompt_tok_s"]
    # it waited for the model thread less than one 64-token chunk of the fill takes (llama.cpp's abort callback
    # stops the chunk mid-way), with room for a busy machine
    assert rec["queue_s"] < chunk_s + 0.5, (rec, chunk_s)
    assert s["fill"]["preempted"] >= 1


async def test_stats_say_what_was_decided_about_the_draft_model(client: LanguageClient):
    s = await stats(client)
    d = s["draft_model"]
    # resident where it can pay, unloaded where it cannot, and the figures that decided it
    # (loaded again once measured costs say it could pay: another process loading this CPU changes them)
    kept = ("resident: ", "reloaded: ") if d["resident"] else ("unloaded: ", "unloaded again: ")
    assert d["decision"].startswith(kept)
    assert ("can pay" if d["resident"] else "cannot pay") in d["decision"] and "ms" in d["decision"]
    assert s["memory"]["segment_tokens"]["entries"] <= s["memory"]["segment_tokens"]["limit"]
    assert s["memory"]["files_chosen"]["documents"] <= s["memory"]["files_chosen"]["limit"]


async def test_typing_after_a_far_jump_fills_the_page_across_the_keystrokes(client: LanguageClient):
    # each keystroke's request supersedes the last before its answer is seen: a fill that waits for an idle
    # model never runs, and a fast prompt's own evaluation is lost at every keystroke; the page gets a step
    path = REAL / "queryObserver.ts"
    uri, original = open_doc(client, path, uri=(REAL / "queryObserver-typing.ts").as_uri())
    text, pos = empty_line(client, uri, original, 600)
    word = "qzx_wobble_9_plonk_7"   # not what any suggestion says: no keystroke is answered from the cache
    await inline(client, uri, pos)   # the fast answer at the new place: its short prompt is cached now
    before = (await stats(client))["fill"]["tokens"]["typing"]
    pending = []
    for ch in word:
        client.versions[uri] += 1
        pos = type_text(client, uri, client.versions[uri], pos, ch)
        pending.append(asyncio.ensure_future(inline(client, uri, pos)))
        await asyncio.sleep(0.15)
    await asyncio.gather(*pending)
    s = await stats(client)
    # each generation started while typing took its page step of 32 tokens first (the keystrokes in between
    # join the running generation: it has written nothing they disagree with)
    assert s["fill"]["tokens"]["typing"] - before >= 2 * 32, (s["fill"], (await stats(client, records=True))["records"][-len(word) - 1:])
    records = (await stats(client, records=True))["records"]
    assert any(r["source"] == "fast" for r in records[-len(word):]), records[-len(word):]


async def test_where_a_fast_answer_is_shown_the_pages_own_answer_is_offered(client: LanguageClient):
    """A far jump: a fast prompt answers; the fill evaluates the page and generates the page's own answer at the
    cursor; where it differs from the one shown, `tandem/betterCompletion` names the document, its version and
    the cursor, and asking again there gives it (from the cache); where it is the same, nothing is said. Either
    way the answer then comes from the same prompt as the offer's (asked once more after the document was closed
    and opened again)."""
    path = REAL / "httpx_models.py"
    uri, original = open_doc(client, path, uri=(REAL / "httpx-offer.py").as_uri())
    client.versions[uri] = 1
    told: list = []
    waiting = asyncio.ensure_future(client.wait_for_notification("tandem/betterCompletion"))
    waiting.add_done_callback(lambda f: told.append(f.result()) if not f.cancelled() else None)
    text, pos = empty_line(client, uri, original, OFFER_LINE)
    await asyncio.sleep(0.3)
    before = (await stats(client))["offers"]
    first = await inline(client, uri, pos)
    assert (await last_record(client))["source"] == "fast"
    t0 = time.monotonic()
    while True:   # the offer is looked at once the fill has the page: offered, the same, or nothing there
        o = (await stats(client))["offers"]
        if sum(o[k] - before[k] for k in ("offered", "same", "silent")) >= 1:
            break
        assert o["stopped"] == before["stopped"], o   # nothing moved, nothing typed: it is not stopped
        assert time.monotonic() - t0 < 240, o
        await asyncio.sleep(0.25)
    assert o["waiting"] - before["waiting"] == 1 and o["generated"] - before["generated"] == 1, o
    await asyncio.sleep(0.3)
    again = await inline(client, uri, pos)
    if o["offered"] > before["offered"]:
        note = told[0] if told else None   # (pygls gives a notification's params as a named tuple)
        assert note and note.uri == uri and note.version == client.versions[uri], told
        assert (note.position.line, note.position.character) == (pos.line, pos.character), told
        assert again != first and (await last_record(client))["source"] == "cache", (first, again)
    else:
        assert not told and again == first, (told, first, again)
    waiting.cancel()
    # the page's own answer there, with the typing cache forgotten (the KV store keeps the page)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    open_doc(client, path, text, uri=uri)
    client.versions[uri] = 1
    await asyncio.sleep(0.6)
    page = await inline(client, uri, pos)
    rec = await last_record(client)
    # the same prompt as the offer's: its text need not match to the byte, as the two evaluate the prompt in
    # different batches (the fill's chunks and the offer's last token; the store's state and the rest in one
    # batch here) and greedy decoding follows the floating-point noise where two tokens are close
    assert rec["source"] == "model" and rec["prompt"] == o["prompt"] != "", (rec, o)
    assert page.strip() or o["silent"] > before["silent"], (first, again, page)


async def test_a_screen_read_away_from_the_cursor_fills_its_page_and_a_click_there_is_answered_by_it(
        client: LanguageClient):
    """tandem/visibleRanges (VS Code's client sends them after a scroll): the cursor at the top of the file, the
    user reads lines 241-280; the fill prepares the page there, so that where the cursor then lands on one of
    those lines, the page's prompt answers at once and evaluates only the cursor's line and what follows (a far
    jump with nothing cached is answered by a fast prompt: the first test)."""
    path = REAL / "queryObserver.ts"
    # an import of its own: the page's head (the file's imports) differs from the other tests' states
    original = "import { screenRead } from './screenRead'\n" + path.read_text()
    uri, _ = open_doc(client, path, original, uri=(REAL / "queryObserver-screen.ts").as_uri())
    await idle(client)   # the page at the top, where the cursor is
    before = (await stats(client))["fill"]
    client.protocol.notify("tandem/visibleRanges", {"uri": uri, "ranges": [
        {"start": {"line": 240, "character": 0}, "end": {"line": 279, "character": 0}}]})
    t0 = time.monotonic()
    while (await stats(client))["fill"]["views"] == before["views"]:
        assert time.monotonic() - t0 < 10, "the screen was not taken as a place to fill"
        await asyncio.sleep(0.1)
    s = await idle(client)
    assert s["fill"]["tokens"]["page"] - before["tokens"]["page"] > 300, (before, s["fill"])
    assert s["fill"]["tokens"]["fast"] == before["tokens"]["fast"], (before, s["fill"])   # no fast prompt there
    text, pos = empty_line(client, uri, original, 263)   # `this.#currentResult = result`, on the screen read
    await asyncio.sleep(0.3)
    await inline(client, uri, pos)
    rec = await last_record(client)
    put_back(client, uri, text, 263, original)
    assert rec["source"] == "model", rec
    assert rec["prompt_tokens"] > 300 and rec["prompt_evaluated"] <= 120 + OPTIONS["suffixTokensAtRest"], rec


async def test_a_cursor_move_is_taken_in_either_shape_and_a_bad_one_is_ignored(client: LanguageClient):
    """tandem/didMoveCursor as Tandem's clients send it ({uri, position}) and as LSP's own notifications carry a
    document ({textDocument: {uri}, position}: what LSP clients write by habit); one without a
    document, one at a position that is no position, and one for a document not open change nothing."""
    path = REAL / "httpx_models.py"
    uri, _ = open_doc(client, path, "def moved(a, b):\n    return a + b\n", uri=(REAL / "moved.py").as_uri())
    before = (await stats(client))["fill"]["cursor_moves"]
    at = {"line": 1, "character": 4}
    for params in ({"uri": uri, "position": at}, {"textDocument": {"uri": uri}, "position": at},
                   {"position": at}, {"uri": uri, "position": {"line": -1, "character": "x"}},
                   {"textDocument": {"uri": uri + ".missing"}, "position": at}, ["not", "an", "object"]):
        client.protocol.notify("tandem/didMoveCursor", params)
    t0 = time.monotonic()
    while (await stats(client))["fill"]["cursor_moves"] - before < 2 and time.monotonic() - t0 < 10:
        await asyncio.sleep(0.1)
    s = await idle(client)
    assert s["fill"]["cursor_moves"] - before == 2, s["fill"]


async def test_a_move_is_filled_at_once_and_an_edit_after_the_pause(client: LanguageClient):
    """The clients report a move (or an open) once the cursor has rested: its fill starts at once, whatever the
    pause; an edit's request follows the edit, so its fill waits for `warmupPauseMs` (set long here)."""
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tandem": {**OPTIONS, "warmupPauseMs": 60000}}))
    await asyncio.sleep(0.3)
    try:
        assert setting(await stats(client), "warmupPauseMs")["value"] == 60000
        text = "\n".join(f"def f{i}(a, b):\n    return a * {i} + b\n" for i in range(40))

        async def runs_after(before: int, seconds: float) -> int:
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                n = (await stats(client))["fill"]["runs"]
                if n > before:
                    return n
                await asyncio.sleep(0.05)
            return before

        before = (await stats(client))["fill"]["runs"]
        uri, _ = open_doc(client, REAL / "at_once.py", text)
        assert await runs_after(before, 10) > before, "an open's fill waited for the pause"
        await idle(client)
        before = (await stats(client))["fill"]["runs"]
        client.protocol.notify("tandem/didMoveCursor", {"uri": uri, "position": {"line": 60, "character": 4}})
        assert await runs_after(before, 10) > before, "a move's fill waited for the pause"
        await idle(client)
        before = (await stats(client))["fill"]["runs"]
        type_text(client, uri, 2, types.Position(line=61, character=4), "x")
        assert await runs_after(before, 3) == before, "an edit's fill did not wait for the pause"
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"tandem": OPTIONS}))
        await asyncio.sleep(0.3)
    assert setting(await stats(client), "warmupPauseMs")["value"] == OPTIONS["warmupPauseMs"]
