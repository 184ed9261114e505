"""The Neovim plugin's accept key and commands, headless, without the server (tests/editors/nvim_keys.lua): where there is no
suggestion the key does what the mapping it replaced did, so nvim-cmp's, blink.cmp's or a snippet plugin's <Tab>
keeps working. And :Tandem, :checkhealth tandem."""
from nvim_helpers import run_nvim


def test_the_accept_key_falls_back_to_the_mapping_it_replaced(tmp_path):
    res = run_nvim(tmp_path, "nvim_keys.lua")
    assert res["plain"] == "a\tb"                      # no mapping before: the key itself
    assert res["plain_with_suggestion"] == "a\tb"      # a suggestion: accepted, no tab typed
    assert res["accepted"] == 1
    assert res["plugin"] == "x[plugin]y"               # the plugin's callback ran, and could edit the buffer
    assert res["expr"] == "u(expr)v"                   # an expr mapping's keys were typed
    assert res["commands"] and "no such command nosuch (status, stats" in res["unknown_command"]
    # :checkhealth tandem says what is missing, and how to get it
    health = res["health"]
    assert "Neovim 0.11" in health and "server command not found: no-such-tandem-command" in health, health
    assert "make demo" in health and "no tandem server is running" in health, health


def test_ghost_text_on_0_11_asks_shows_and_is_taken_a_word_a_line_and_the_rest(tmp_path):
    """The plugin's own ghost text (0.11), with a stand-in client (tests/editors/nvim_ghost_unit.lua)."""
    res = run_nvim(tmp_path, "nvim_ghost_unit.lua")
    assert res["lines"] == ["def area(w, h):", "    total = w * h", "    return total", "", "print(area(2, 3))"]
    # shown after the cursor: the first line inline, the rest below; each accept leaves the rest shown
    assert res["seen"] == [
        {"text": "total = w * h\n    return total", "marks": 1, "inline": "total = w * h", "below": 1},
        {"text": " = w * h\n    return total", "marks": 1, "inline": " = w * h", "below": 1},
        {"text": "\n    return total", "marks": 1, "inline": "", "below": 1},
        {"text": "", "marks": 0, "inline": "", "below": 0},
    ]
    sent = res["sent"]
    # an explicit request (triggerKind Invoked) at the cursor, two partial accepts with their characters, and
    # the item's command once the whole suggestion was taken
    assert sent[0] == {"method": "textDocument/inlineCompletion", "trigger": 1, "line": 1, "character": 4}
    assert [(m["method"], m.get("chars")) for m in sent[1:3]] == [("tandem/didPartiallyAccept", 5),
                                                                  ("tandem/didPartiallyAccept", 8)]
    assert (sent[3]["method"], sent[3]["command"]) == ("workspace/executeCommand", "tandem.accepted")
    assert res["plain"] == "a\tb"
    # tandem/betterCompletion: asked again (and the new suggestion shown) only in the same buffer, at the same
    # version and cursor, in insert mode
    assert res["better"] == {"stale": False, "elsewhere": False, "other_doc": False, "asked_before": 0,
                             "here": True, "shown": "area = w * h", "asked": 1, "normal_mode": False}, res["better"]
    assert res["pieces"] == ["  foo", "(", "x = 1", "\n    y = 2", "abc", "a b"]
    assert len(res["dismissed"]) == 1 and res["dismissed"][0].startswith("file://"), res["dismissed"]


def test_next_edit_preview_accept_dismiss_and_the_keys_it_hides(tmp_path):
    """The next edit (editors/neovim/lua/tandem/next_edit.lua) with a stand-in client
    (tests/editors/nvim_next_edit_unit.lua): its preview and keys, the ends of a file, CRLF, and the keys giving
    way to the completion menu and a snippet."""
    res = run_nvim(tmp_path, "nvim_next_edit_unit.lua")
    assert res["ok"], res
    # a rename in normal mode, then a rest: asked once, at the cursor, with the buffer's LSP version
    assert res["asks"] == 1 and res["asked"]["position"] == {"line": 0, "character": 13}, res["asked"]
    assert isinstance(res["asked"]["textDocument"]["version"], int)
    # the lines that change marked, the new ones as virtual lines below the last of them
    new = ["    total = width * h", "    print(width)", "    return total"]
    assert res["preview"] == {"old_rows": [1, 2, 3], "at": 3, "above": False,
                              "new": [[line, "TandemEditNew"] for line in new]}, res["preview"]
    # <Tab> and <Esc> are the preview's in normal and insert mode while it is shown
    assert res["keys_shown"] == {"n": "Tandem: accept the next edit", "i": "Tandem: accept the next edit",
                                 "esc": "Tandem: dismiss the next edit"}
    # <Tab> applied it, ran its command, and gave the keys back (insert mode's <Tab>: the ghost text's again)
    assert res["accepted_lines"] == ["def area(width, h):", *new, "", "x = 1"]
    assert res["accept_command"] == {"command": "tandem.nextEditAccepted", "arguments": ["ne-1"]}
    assert res["after_accept"] == {"marks": 0, "n": "", "esc": "", "i": "Tandem: accept the suggestion"}
    # <Esc> in insert mode: dismissed (the server told its id), insert mode left, the buffer as it was, no new ask
    d = res["dismissed"]
    assert d["sent"] == {"id": d["id"]} and d["mode"] == "n" and d["same"] and d["marks"] == 0 and d["esc"] == ""
    assert res["asked_after_dismiss"] == 0
    # ghost text and a next edit both shown: <Tab> takes the ghost text; that edit of the buffer dismisses the other
    assert res["both"]["ghost"] == "# done" and res["both"]["edit"]
    assert res["ghost_won"] == {"line": "# done", "dismissed": res["both"]["edit"],
                                "tab": "Tandem: accept the suggestion"}
    assert res["plain"] == "a\tb"                      # nothing shown: the key itself
    # typing on cancels the request out; an answer for a text that is gone is not shown
    assert res["cancelled"] and not res["late_shown"] and not res["stale_shown"]
    # a range ending at the line count, and lines added after the last one
    assert res["end_preview"]["old_rows"] == [1] and res["end_replaced"] == ["a", "c", "d"]
    assert res["end_preview_added"] == {"old_rows": [], "at": 2, "above": False, "new": [["e", "TandemEditNew"]]}
    assert res["end_added"] == ["a", "c", "d", "e"]
    assert res["no_newline_preview"]["old_rows"] == [1] and res["no_newline"] == ["a", "c", "d"], res
    # the server's insertion after a last line without a newline (that line written again, then the new one)
    assert res["eof_insert_preview"] == {"old_rows": [], "at": 1, "above": False, "new": [["c", "TandemEditNew"]]}
    assert res["eof_insert"] == ["a", "b", "c"]
    # a CRLF buffer: the edit's "\r" shows nowhere, and a line added at the end adds no empty one
    assert res["crlf_preview"] == {"old_rows": [1], "at": 1, "above": False, "new": [["B", "TandemEditNew"]]}
    assert res["crlf_replaced"] == ["a", "B"] and res["crlf_added"] == ["a", "B", "e"], res
    # the completion menu open in insert mode: <Esc> closes it and leaves insert mode, the edit stays (not
    # dismissed); <Tab> is the menu's, not the edit's
    assert res["menu_esc"] == {"shown": True, "after": {"menu": 0, "mode": "n", "edit": True, "dismissed": 0}}
    assert res["menu_tab"] == {"shown": True, "after": {"line": "    total = w * h", "accepted": 0}}, res
    # at a snippet's empty stop (insert mode) <Tab> goes to the next stop; the edit stays, not taken
    snippet = res["snippet"]
    assert snippet["shown"] and snippet["active"] and snippet["cursor"] == [5, 2], snippet
    assert snippet["after"] == {"cursor": [5, 4], "edit": True, "line": "    total = w * h", "accepted": 0}
    # nextEdit = false in the user's settings: nothing asked
    assert res["off_asked"] is False and res["off_sent"] == 0
    assert res["changed_part"] == [1, ["b"], ["x"]]
