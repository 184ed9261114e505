-- The next edit's preview and keys on Neovim 0.11 (editors/neovim/lua/tandem/next_edit.lua), headless, with a
-- stand-in LSP client that answers textDocument/copilotInlineEdit with one scripted edit and records what it is
-- sent. Driven by tests/editors/test_neovim_keys.py; writes what happened as JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
vim.opt.rtp:prepend(repo .. "/editors/neovim")
local session = require("nvim_session")
local out, finish, wait_until = session.result, session.finish, session.wait_until

local LINES = { "def area(w, h):", "    total = w * h", "    print(w)", "    return w * h", "", "x = 1" }
local EDIT = { text = "    total = width * h\n    print(width)\n    return total\n", first = 1, last = 4 }
local GHOST = "# done"   -- nil: no ghost text
local sent, hold = {}, false
local held = {}
local client = {
  id = 4242,
  offset_encoding = "utf-16",
  is_stopped = function() return false end,
  request = function(_, method, params, handler)
    table.insert(sent, { method = method, params = params })
    if method == "textDocument/copilotInlineEdit" then
      local answer = { edits = { { id = "ne-" .. #sent, text = EDIT.text,
        range = { start = { line = EDIT.first, character = 0 },
                  ["end"] = { line = EDIT.last, character = EDIT.last_char or 0 } },
        textDocument = { uri = params.textDocument.uri, version = params.textDocument.version },
        command = { title = "Accept next edit", command = "tandem.nextEditAccepted",
                    arguments = { "ne-" .. #sent } } } } }
      if hold then held[#sent] = function() handler(nil, answer) end else handler(nil, answer) end
    elseif method == "textDocument/inlineCompletion" then
      handler(nil, { items = GHOST and { { insertText = GHOST } } or {} })
    end
    return true, #sent
  end,
  notify = function(_, method, params) table.insert(sent, { method = method, params = params }); return true end,
  cancel_request = function(_, id) table.insert(sent, { method = "$/cancelRequest", params = { id = id } }) end,
}
local tandem = require("tandem")
tandem.config.cursor_rest_ms = 0
tandem.config.next_edit_ms = 100
local next_edit = require("tandem.next_edit")
local ghost = require("tandem.ghost")

local buf = vim.api.nvim_create_buf(true, false)
vim.api.nvim_set_current_buf(buf)
vim.bo[buf].filetype = "python"
-- as Neovim's LSP client keeps the version it sends (a stand-in client is not attached to the buffer)
vim.api.nvim_buf_attach(buf, false, { on_lines = function(_, b, tick) vim.lsp.util.buf_versions[b] = tick end })
vim.api.nvim_buf_set_lines(buf, 0, -1, false, LINES)
tandem.on_attach(client, buf)

local function lines() return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end
-- the last message sent with this method (and matching `pred`), and its index
local function last(method, pred)
  for i = #sent, 1, -1 do
    if sent[i].method == method and (not pred or pred(sent[i].params)) then return sent[i].params, i end
  end
end
local function methods()
  local m = {}
  for _, s in ipairs(sent) do m[#m + 1] = s.method end
  return m
end
local function preview()
  local marks = vim.api.nvim_buf_get_extmarks(buf, next_edit.ns, 0, -1, { details = true })
  local p = { old_rows = {}, new = {}, above = false }
  for _, m in ipairs(marks) do
    local d = m[4]
    if d.line_hl_group then table.insert(p.old_rows, m[2]) end
    if d.virt_lines then
      p.at = m[2]
      p.above = d.virt_lines_above or false
      for _, l in ipairs(d.virt_lines) do table.insert(p.new, { l[1][1], l[1][2] }) end
    end
  end
  return p
end
local function desc(mode, key)
  return vim.fn.maparg(key or "<Tab>", mode, false, true).desc or ""
end

session.run(function()
  -- an edit in normal mode (the rename on line 1), then a rest: asked automatically, once
  vim.api.nvim_win_set_cursor(0, { 1, 9 })
  vim.api.nvim_input("ciwwidth<Esc>")
  if not wait_until(function() return next_edit.shown(buf) ~= nil end, 5) then
    out.steps = { "no preview" }; out.sent = methods(); return finish(false)
  end
  out.asked = vim.deepcopy(last("textDocument/copilotInlineEdit"))
  out.asks = #vim.tbl_filter(function(m) return m == "textDocument/copilotInlineEdit" end, methods())
  -- the preview: the changed lines marked, the new ones below the last of them; unchanged lines left alone
  out.preview = preview()
  out.keys_shown = { n = desc("n"), i = desc("i"), esc = desc("n", "<Esc>") }
  -- <Tab> in normal mode takes it: applied, the command run, the preview and its keys gone
  vim.api.nvim_input("<Tab>")
  wait_until(function() return next_edit.shown(buf) == nil end, 2)
  out.accepted_lines = lines()
  out.accept_command = last("workspace/executeCommand")
  EDIT = { text = "    return total * 2\n", first = 3, last = 4 }
  out.after_accept = { marks = #vim.api.nvim_buf_get_extmarks(buf, next_edit.ns, 0, -1, {}), n = desc("n"),
                       i = desc("i"), esc = desc("n", "<Esc>") }
  -- the accept was an edit: after a rest the next edit is asked for again (another one this time);
  -- <Esc> in insert mode lets it go, tells the server and still leaves insert mode; the buffer is unchanged
  if not wait_until(function() return next_edit.shown(buf) ~= nil end, 5) then
    out.steps = { "no second preview" }; out.sent = methods(); return finish(false)
  end
  local shown_id = next_edit.shown(buf).id
  local before = lines()
  vim.api.nvim_input("A<Esc>")
  wait_until(function() return vim.fn.mode() == "n" and next_edit.shown(buf) == nil end, 2)
  out.dismissed = { mode = vim.fn.mode(), same = vim.deep_equal(before, lines()),
                    sent = last("tandem/nextEditDismissed"),
                    id = shown_id, marks = #vim.api.nvim_buf_get_extmarks(buf, next_edit.ns, 0, -1, {}),
                    esc = desc("i", "<Esc>") }
  -- leaving insert mode was no new edit: nothing more is asked
  local count = #sent
  local t = vim.uv.now()
  wait_until(function() return vim.uv.now() - t > 400 end, 1)
  out.asked_after_dismiss = #sent - count

  -- ghost text wins: both shown in insert mode, <Tab> takes the ghost text (the edit, now stale, goes)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, LINES)
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  next_edit.ask(buf, client)
  vim.api.nvim_input("A<M-\\>")
  wait_until(function() return (ghost.text(buf) or "") ~= "" end, 2)
  out.both = { ghost = ghost.text(buf), edit = (next_edit.shown(buf) or {}).id }
  vim.api.nvim_input("<Tab><Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 2)
  out.ghost_won = { line = lines()[5], dismissed = last("tandem/nextEditDismissed").id, tab = desc("i") }

  -- with nothing shown <Tab> is what it was: the key itself (no ask meanwhile)
  tandem.config.settings = { nextEdit = false }
  next_edit.clear(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a" })
  vim.bo[buf].expandtab = false   -- python's ftplugin types spaces for a Tab
  vim.api.nvim_input("A<Tab>b<Esc>")
  wait_until(function() return vim.fn.mode() == "n" and lines()[1] ~= "a" end, 2)
  out.plain = lines()[1]
  tandem.config.settings = {}

  -- typing on while a request is out cancels it; its answer, if it came, is not shown
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, LINES)
  hold = true
  next_edit.ask(buf, client)
  local req = #sent
  vim.api.nvim_input("Ax<Esc>")
  out.cancelled = wait_until(function()
    return last("$/cancelRequest", function(p) return p.id == req end) ~= nil
  end, 2)
  held[req]()
  out.late_shown = next_edit.shown(buf) ~= nil
  -- an answer for an older version of the text: not shown
  next_edit.ask(buf, client)
  req = #sent
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "# changed" })
  held[req]()
  out.stale_shown = next_edit.shown(buf) ~= nil
  hold = false
  next_edit.clear(buf)

  -- an edit whose range ends at the line count (the document's end), and one adding lines after the last
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "b" })
  EDIT = { text = "c\nd\n", first = 1, last = 2 }
  next_edit.ask(buf, client)
  out.end_preview = preview()
  next_edit.accept(buf)
  out.end_replaced = lines()
  EDIT = { text = "e\n", first = 3, last = 3 }
  next_edit.ask(buf, client)
  out.end_preview_added = preview()
  next_edit.accept(buf)
  out.end_added = lines()

  -- a range ending at the end of a last line without a newline (the server's way where the text has none)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "b" })
  EDIT = { text = "c\nd", first = 1, last = 1, last_char = 1 }
  next_edit.ask(buf, client)
  out.no_newline_preview = preview()
  next_edit.accept(buf)
  out.no_newline = lines()

  -- the server's insertion after a last line without a newline: that line and the new ones, to its end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "b" })
  EDIT = { text = "b\nc", first = 1, last = 1, last_char = 1 }
  next_edit.ask(buf, client)
  out.eof_insert_preview = preview()
  next_edit.accept(buf)
  out.eof_insert = lines()

  -- a CRLF buffer: the edit's lines end in "\r\n", which neither the preview nor the buffer shows
  vim.bo[buf].fileformat = "dos"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "b" })
  EDIT = { text = "a\r\nB\r\n", first = 0, last = 2 }
  next_edit.ask(buf, client)
  out.crlf_preview = preview()
  next_edit.accept(buf)
  out.crlf_replaced = lines()
  EDIT = { text = "e\r\n", first = 2, last = 2 }
  next_edit.ask(buf, client)
  next_edit.accept(buf)
  out.crlf_added = lines()
  vim.bo[buf].fileformat = "unix"

  -- the keys give way: with the completion menu open in insert mode <Esc> is the menu's (it closes, insert mode
  -- is left, the edit stays) and so is <Tab>; at a snippet's empty stop <Tab> jumps to the next one
  GHOST = nil   -- no ghost text to take <Tab> first
  vim.o.completeopt = "menu,menuone,noinsert,noselect"   -- the menu opens without changing the text
  EDIT = { text = "    total = width * h\n", first = 1, last = 2 }
  local function menu_open_with_edit(name)
    next_edit.clear(buf)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, LINES)
    vim.api.nvim_win_set_cursor(0, { 4, 0 })
    vim.api.nvim_input("A ")
    wait_until(function() return vim.fn.mode() == "i" end, 2)
    next_edit.ask(buf, client)
    vim.api.nvim_input("<C-n>")
    if not wait_until(function() return vim.fn.pumvisible() == 1 end, 2) then
      out.steps = { name .. ": no menu" }; return false
    end
    return next_edit.shown(buf) ~= nil
  end
  out.menu_esc = { shown = menu_open_with_edit("esc") }
  local dismissals = #vim.tbl_filter(function(m) return m == "tandem/nextEditDismissed" end, methods())
  vim.api.nvim_input("<Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 2)
  out.menu_esc.after = { menu = vim.fn.pumvisible(), mode = vim.fn.mode(), edit = next_edit.shown(buf) ~= nil,
                         dismissed = #vim.tbl_filter(function(m) return m == "tandem/nextEditDismissed" end,
                                                     methods()) - dismissals }
  out.menu_tab = { shown = menu_open_with_edit("tab") }
  local accepts = #vim.tbl_filter(function(m) return m == "workspace/executeCommand" end, methods())
  vim.api.nvim_input("<Tab><Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 2)
  out.menu_tab.after = { line = lines()[2], accepted = #vim.tbl_filter(function(m)
    return m == "workspace/executeCommand" end, methods()) - accepts }

  next_edit.clear(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, LINES)
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.api.nvim_input("i")
  wait_until(function() return vim.fn.mode() == "i" end, 2)
  vim.snippet.expand("f($1, $2)")
  next_edit.ask(buf, client)
  out.snippet = { shown = next_edit.shown(buf) ~= nil, active = vim.snippet.active({ direction = 1 }),
                  cursor = vim.api.nvim_win_get_cursor(0) }
  accepts = #vim.tbl_filter(function(m) return m == "workspace/executeCommand" end, methods())
  vim.api.nvim_input("<Tab>")
  wait_until(function() return vim.api.nvim_win_get_cursor(0)[2] ~= out.snippet.cursor[2] end, 2)
  out.snippet.after = { cursor = vim.api.nvim_win_get_cursor(0), edit = next_edit.shown(buf) ~= nil,
                        line = lines()[2], accepted = #vim.tbl_filter(function(m)
                          return m == "workspace/executeCommand" end, methods()) - accepts }
  vim.api.nvim_input("<Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 2)
  next_edit.clear(buf)
  GHOST = "# done"

  -- nextEdit = false: nothing asked
  tandem.config.settings = { nextEdit = false }
  count = #sent
  out.off_asked = next_edit.ask(buf, client)
  out.off_sent = #sent - count
  out.changed_part = { next_edit.changed_part({ "a", "b", "c" }, { "a", "x", "c" }) }
  finish(true)
end)
