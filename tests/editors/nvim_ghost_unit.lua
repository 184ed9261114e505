-- The plugin's own ghost text on Neovim 0.11 (editors/neovim/lua/tandem/ghost.lua), headless, with a stand-in
-- LSP client that answers every inlineCompletion with one scripted suggestion and records what it is sent: <M-\>
-- asks (an explicit request), <M-Right> takes the next word, <M-C-Right> the next line, <Tab> the rest; with
-- nothing shown <Tab> is a Tab. Driven by tests/editors/test_neovim_keys.py; writes what happened as JSON.
vim.opt.rtp:prepend(os.getenv("TANDEM_REPO") .. "/editors/neovim")
local out = {}
local SUGGESTION = "total = w * h\n    return total"
local sent = {}
local client = {
  offset_encoding = "utf-16",
  is_stopped = function() return false end,
  request = function(_, method, params, handler)
    table.insert(sent, { method = method, params = params })
    if method == "textDocument/inlineCompletion" then
      handler(nil, { items = { { insertText = SUGGESTION,
        command = { title = "Tandem: accepted", command = "tandem.accepted", arguments = { { chars = #SUGGESTION } } } } } })
    end
    return true, #sent
  end,
  notify = function(_, method, params) table.insert(sent, { method = method, params = params }); return true end,
  cancel_request = function() end,
}
local tandem = require("tandem")
tandem.config.cursor_rest_ms = 0
local ghost = require("tandem.ghost")

local buf = vim.api.nvim_create_buf(true, false)
vim.api.nvim_set_current_buf(buf)
vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "def area(w, h):", "    ", "", "print(area(2, 3))" })
tandem.on_attach(client, buf)
local seen = {}
vim.keymap.set("i", "<F2>", function()
  local marks = vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
  local d = marks[1] and marks[1][4] or {}
  table.insert(seen, { text = ghost.text(buf) or "", marks = #marks,
                       inline = d.virt_text and d.virt_text[1][1] or "",
                       below = d.virt_lines and #d.virt_lines or 0 })
end, { buffer = buf })

local function type_keys(keys) vim.api.nvim_feedkeys(vim.keycode(keys), "tx", false) end

vim.api.nvim_win_set_cursor(0, { 2, 0 })
type_keys("A<M-\\><F2><M-Right><F2><M-C-Right><F2><Tab><F2><Esc>")
out.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
out.seen = seen
out.sent = {}
for _, m in ipairs(sent) do
  table.insert(out.sent, { method = m.method, trigger = m.params.context and m.params.context.triggerKind,
                           line = m.params.position and m.params.position.line,
                           character = m.params.position and m.params.position.character,
                           chars = m.params.chars, command = m.params.command })
end
-- the server offers a better suggestion (tandem/betterCompletion): asked again where the buffer's version and
-- the cursor are as the notification says, not otherwise
local BETTER = "area = w * h"
local asked_before = #sent
client.request = function(_, method, params, handler)
  table.insert(sent, { method = method, params = params })
  if method == "textDocument/inlineCompletion" then handler(nil, { items = { { insertText = BETTER } } }) end
  return true, #sent
end
vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "def area(w, h):", "    ", "" })
vim.keymap.set("i", "<F3>", function()
  local pos = vim.lsp.util.make_position_params(0, "utf-16").position
  local uri = vim.uri_from_bufnr(buf)
  local tick = vim.b[buf].changedtick
  out.better = {
    stale = ghost.better(client, { uri = uri, version = tick - 1, position = pos }),
    elsewhere = ghost.better(client, { uri = uri, version = tick, position = { line = 0, character = 0 } }),
    other_doc = ghost.better(client, { uri = "file:///elsewhere.py", version = tick, position = pos }),
    asked_before = #sent - asked_before,
    here = ghost.better(client, { uri = uri, version = tick, position = pos }),
    shown = ghost.text(buf) or "",
    asked = #sent - asked_before,
  }
end, { buffer = buf })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
type_keys("A<F3><Esc>")
out.better.normal_mode = ghost.better(client, { uri = vim.uri_from_bufnr(buf), version = vim.b[buf].changedtick,
                                                position = { line = 1, character = 4 } })
-- nothing shown: the accept key is the key itself
vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a" })
type_keys("A<Tab>b<Esc>")
out.plain = vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1]
-- <Esc> with the better suggestion shown told the server it was dismissed; an <Esc> with nothing shown (after the
-- whole suggestion was taken, or with none) tells it nothing
out.dismissed = {}
for _, m in ipairs(sent) do
  if m.method == "tandem/didDismiss" then table.insert(out.dismissed, m.params.uri) end
end
out.pieces = { ghost.piece("  foo(bar)", "word"), ghost.piece("(bar)", "word"), ghost.piece("x = 1\ny", "line"),
               ghost.piece("\n    y = 2\nz", "line"), ghost.piece("abc", "line"), ghost.piece("a b", "all") }
vim.fn.writefile({ vim.json.encode(out) }, os.getenv("TANDEM_RESULT"))
vim.cmd("qa!")
