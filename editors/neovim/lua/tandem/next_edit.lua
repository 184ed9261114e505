-- Next edit (issue 52): once an edit rests, the server is asked what edit follows it (textDocument/copilotInlineEdit,
-- as GitHub's Copilot language server names it) and its answer, a replacement of whole lines, is shown where it
-- would go: the lines it changes highlighted (TandemEditOld), the lines it writes below them as virtual lines
-- (TandemEditNew). <Tab> takes it and <Esc> lets it go; both keys are mapped in the buffer only while an edit is
-- shown, and give back the mappings they hid when it goes. In insert mode they give way to the completion menu
-- (<Tab> and <Esc> are its keys then) and <Tab> to a snippet's next stop. The server counts both
-- (tandem.nextEditAccepted, tandem/nextEditDismissed).
local M = {}

M.ns = vim.api.nvim_create_namespace("tandem_next_edit")
M.hl_old, M.hl_new = "TandemEditOld", "TandemEditNew"
M.METHOD = "textDocument/copilotInlineEdit"
M.ACCEPTED = "tandem.nextEditAccepted"
M.DISMISSED = "tandem/nextEditDismissed"

--- The preview's highlights: DiffDelete and DiffAdd unless a colorscheme or the user defines them (`default`
--- keeps theirs); defined again after each colorscheme, which clears the groups it does not define.
function M.define_highlights()
  vim.api.nvim_set_hl(0, M.hl_old, { default = true, link = "DiffDelete" })
  vim.api.nvim_set_hl(0, M.hl_new, { default = true, link = "DiffAdd" })
end
M.define_highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("tandem_next_edit_highlight", { clear = true }),
  callback = M.define_highlights })

local status = require("tandem.status")
local util = vim.lsp.util

local shown = {}     -- bufnr -> { client, edit, version, hidden = { mode -> { key -> the mapping it hid } } }
local pending = {}   -- bufnr -> { client, req, version }
local asked = {}     -- bufnr -> the version last asked about automatically (no second ask for the same text)

local function valid(bufnr) return vim.api.nvim_buf_is_valid(bufnr) end
local function buf(bufnr) return (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr end
local function tandem() return require("tandem") end

--- The version of the buffer's text the client last sent the server (the LSP version, not changedtick: a change
--- of changedtick without an edit sends nothing).
function M.version(bufnr) return util.buf_versions[bufnr] end

--- Whether next edits are on: the user's `nextEdit` setting (the server honours it too) and no snooze or
--- filetype switched off.
function M.enabled(bufnr)
  local settings = tandem().config.settings or {}
  return settings.nextEdit ~= false and status.active(bufnr)
end

local function keys()
  local k = tandem().config.keymaps or {}
  return k.accept_edit, k.dismiss_edit
end

-- What a key did before the preview mapped it (`prev`: maparg()'s dict, or empty): run where the preview does not
-- take the key. Keys are fed before what is typed next, not remapped unless the hidden mapping was recursive.
local function run_hidden(prev, key)
  if vim.tbl_isempty(prev) then
    return vim.api.nvim_feedkeys(vim.keycode(key), "ni", false)
  end
  local mode = (prev.noremap == 1 and "n" or "m") .. "i"
  if prev.callback then
    local out = prev.callback()
    if prev.expr == 1 and type(out) == "string" and out ~= "" then
      vim.api.nvim_feedkeys(prev.replace_keycodes == 1 and vim.keycode(out) or out, mode, false)
    end
    return
  end
  local rhs = prev.expr == 1 and vim.api.nvim_eval(prev.rhs) or prev.rhs
  vim.api.nvim_feedkeys(vim.keycode(rhs), mode, false)
end

local function unmap(bufnr, s)
  if not valid(bufnr) then return end
  vim.api.nvim_buf_call(bufnr, function()
    for mode, byKey in pairs(s.hidden) do
      for key, prev in pairs(byKey) do
        pcall(vim.keymap.del, mode, key, { buffer = bufnr })
        if prev.buffer == 1 then vim.fn.mapset(prev) end   -- a global mapping shows again by itself
      end
    end
  end)
  s.hidden = {}
end

-- Map `key` in normal and insert mode for as long as the edit is shown; `take(mode)` returns false where the key
-- should do what it did before.
local function map(bufnr, s, key, take, desc)
  if not key then return end
  vim.api.nvim_buf_call(bufnr, function()
    for _, mode in ipairs({ "n", "i" }) do
      local prev = vim.fn.maparg(key, mode, false, true)
      s.hidden[mode] = s.hidden[mode] or {}
      s.hidden[mode][key] = prev
      vim.keymap.set(mode, key, function()
        if not take(mode) then run_hidden(prev, key) end
      end, { buffer = bufnr, desc = desc })
    end
  end)
end

--- Remove the preview from this buffer (0: the current one) and cancel a request on its way; tells the server
--- nothing (dismiss() does).
function M.clear(bufnr)
  bufnr = buf(bufnr)
  local p = pending[bufnr]
  pending[bufnr] = nil
  if p and p.req and not p.client:is_stopped() then pcall(p.client.cancel_request, p.client, p.req) end
  local s = shown[bufnr]
  shown[bufnr] = nil
  if s then unmap(bufnr, s) end
  if valid(bufnr) then vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1) end
end

--- The edit shown in this buffer (0: the current one): { id, range, text, old } (`old`: the lines it replaces,
--- as text); nil when none.
function M.shown(bufnr)
  local s = shown[buf(bufnr)]
  if not s then return nil end
  return { id = s.edit.id, range = s.edit.range, text = s.edit.text, old = s.old }
end

-- a CRLF document's edit ends its lines with "\r\n"; the buffer's lines have no "\r"
local function lf(text) return (text:gsub("\r\n", "\n")) end

local function split_lines(text)
  local lines = vim.split(lf(text), "\n", { plain = true })
  if lines[#lines] == "" then table.remove(lines) end
  return lines
end

--- The part of a replacement of lines `old` by `new` that differs: the lines both start and end with are left
--- out, so that the preview marks only what changes. Returns the count of equal lines at the start and the
--- differing old and new lines.
function M.changed_part(old, new)
  local head = 0
  while head < #old and head < #new and old[head + 1] == new[head + 1] do head = head + 1 end
  local tail = 0
  while tail < #old - head and tail < #new - head and old[#old - tail] == new[#new - tail] do tail = tail + 1 end
  return head, vim.list_slice(old, head + 1, #old - tail), vim.list_slice(new, head + 1, #new - tail)
end

local function render(bufnr, s)
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local first = s.edit.range.start.line
  local head, old, new = M.changed_part(s.old_lines, split_lines(s.edit.text))
  local count = vim.api.nvim_buf_line_count(bufnr)
  local from = first + head
  for row = from, math.min(from + #old, count) - 1 do
    vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, 0, { line_hl_group = M.hl_old, priority = 150 })
  end
  if #new == 0 then return end
  local virt = {}
  for _, line in ipairs(new) do virt[#virt + 1] = { { line, M.hl_new } } end
  -- below the last changed line; where nothing is replaced (lines added), above the line they go before
  local below = #old > 0 or from >= count
  local row = #old > 0 and math.min(from + #old, count) - 1 or (from >= count and count - 1 or from)
  vim.api.nvim_buf_set_extmark(bufnr, M.ns, math.max(row, 0), 0,
    { virt_lines = virt, virt_lines_above = not below })
end

-- The edit as a text edit apply_text_edits takes. Its range is whole lines and may end at the line count (the
-- document's end); adding lines after the last one, Neovim adds the text as lines, so the text's closing newline
-- would become an empty line (a CRLF one's "\r" too: apply_text_edits reads a lone "\r" as a line end).
local function text_edit(bufnr, e)
  local text = e.text
  if e.range.start.line >= vim.api.nvim_buf_line_count(bufnr) then
    text = text:gsub("\r?\n$", "")
  end
  return { range = vim.deepcopy(e.range), newText = text }
end

--- Take the edit shown in this buffer (0: the current one): apply it, then run its command (the server counts
--- it). False when none is shown, or the buffer changed since (then it is dismissed).
function M.accept(bufnr)
  bufnr = buf(bufnr)
  local s = shown[bufnr]
  if not s then return false end
  if M.version(bufnr) ~= s.version then
    M.dismiss(bufnr)
    return false
  end
  M.clear(bufnr)
  util.apply_text_edits({ text_edit(bufnr, s.edit) }, bufnr, s.client.offset_encoding)
  local cmd = type(s.edit.command) == "table" and s.edit.command or {}
  if not s.client:is_stopped() then
    s.client:request("workspace/executeCommand",
      { command = cmd.command or M.ACCEPTED, arguments = cmd.arguments or { s.edit.id } }, function() end, bufnr)
  end
  return true
end

--- Let the edit shown in this buffer (0: the current one) go, and tell the server; false when none is shown.
function M.dismiss(bufnr)
  bufnr = buf(bufnr)
  local s = shown[bufnr]
  if not s then return false end
  M.clear(bufnr)
  if not s.client:is_stopped() then s.client:notify(M.DISMISSED, { id = s.edit.id }) end
  return true
end

-- Ghost text wins where both are shown: <Tab> takes Neovim's own ghost text ("native"), or does what it did before
-- the preview mapped it (with the default keys, the plugin's ghost text takes it). True when the key is spent.
local function ghost_first(bufnr)
  if tandem().config.suggestions == "native" and vim.lsp.inline_completion then
    return vim.lsp.inline_completion.get() and true or false
  end
  return nil, (require("tandem.ghost").text(bufnr) or "") ~= ""
end

local function menu_open() return vim.fn.pumvisible() == 1 end

local function show(client, bufnr, edit, version)
  -- whole lines: the range ends at column 0 of the line after them, or at the end of a last line that has no
  -- newline (the text then has none either)
  local first, stop = edit.range.start.line, edit.range["end"]
  local whole = stop.character == 0
  local s = { client = client, edit = edit, version = version, hidden = {},
              old_lines = vim.api.nvim_buf_get_lines(bufnr, first, stop.line + (whole and 0 or 1), false) }
  s.old = #s.old_lines > 0 and table.concat(s.old_lines, "\n") .. (whole and "\n" or "") or ""
  if s.old == lf(edit.text) then return end   -- nothing would change
  shown[bufnr] = s
  render(bufnr, s)
  local accept_key, dismiss_key = keys()
  map(bufnr, s, accept_key, function(mode)
    if mode == "i" then
      -- the completion menu's key (a completion plugin's mapping selects with it), or the snippet's jump (the
      -- stop is empty, so insert mode, not select mode where this mapping is not)
      if menu_open() or vim.snippet.active({ direction = 1 }) then return false end
      local spent, ghost = ghost_first(bufnr)
      if spent then return true end
      if ghost then return false end
    end
    return M.accept(bufnr)
  end, "Tandem: accept the next edit")
  map(bufnr, s, dismiss_key, function(mode)
    -- with the completion menu open the key is the menu's: it closes, the edit stays
    if not (mode == "i" and menu_open()) then M.dismiss(bufnr) end
    return false   -- and the key does what it did: <Esc> still leaves insert mode
  end, "Tandem: dismiss the next edit")
end

--- Ask the server for the edit that follows, in this buffer (0: the current one), at the cursor; show the answer
--- if the buffer is still at the version asked about. `client`: the tandem client (default: the buffer's).
function M.ask(bufnr, client)
  bufnr = buf(bufnr)
  client = client or vim.lsp.get_clients({ name = "tandem", bufnr = bufnr })[1]
  M.dismiss(bufnr)   -- asked again with one shown: that one is let go
  M.clear(bufnr)
  if not client or client:is_stopped() or not M.enabled(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local params = util.make_position_params(0, client.offset_encoding)
  local version = M.version(bufnr)
  params.textDocument.version = version
  asked[bufnr] = version
  local p = { client = client, version = version }
  pending[bufnr] = p
  local ok, id = client:request(M.METHOD, params, function(err, result)
    if pending[bufnr] ~= p then return end   -- cancelled, or a newer ask
    pending[bufnr] = nil
    local edit = not err and type(result) == "table" and type(result.edits) == "table" and result.edits[1] or nil
    if not edit or type(edit.range) ~= "table" or type(edit.text) ~= "string" or not valid(bufnr) then return end
    local at = type(edit.textDocument) == "table" and edit.textDocument.version or version
    if at ~= version or M.version(bufnr) ~= version or not M.enabled(bufnr) then return end
    show(client, bufnr, edit, version)
  end, bufnr)
  p.req = ok and id or nil
  if not ok then pending[bufnr] = nil end
  return ok
end

--- Ask once each edit has rested `rest_ms` (no further change); an edit while one is shown dismisses it, one
--- while a request is out cancels that; leaving the buffer dismisses.
function M.attach(client, bufnr, rest_ms)
  local timer = vim.uv.new_timer()
  local group = vim.api.nvim_create_augroup("tandem_next_edit_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, { buffer = bufnr, group = group, callback = function()
    local version = M.version(bufnr)
    local s = shown[bufnr]
    if s and s.version ~= version then M.dismiss(bufnr) end
    if pending[bufnr] and pending[bufnr].version ~= version then M.clear(bufnr) end
    -- TextChanged also comes on leaving insert mode after an edit there: that text was asked about already
    if asked[bufnr] == version then return end
    timer:stop()
    timer:start(rest_ms, 0, vim.schedule_wrap(function()
      if client:is_stopped() or not valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr
          or M.version(bufnr) ~= version or shown[bufnr] or pending[bufnr] then return end
      M.ask(bufnr, client)
    end))
  end })
  vim.api.nvim_create_autocmd("BufLeave", { buffer = bufnr, group = group, callback = function()
    timer:stop()
    if not M.dismiss(bufnr) then M.clear(bufnr) end
  end })
  vim.api.nvim_create_autocmd({ "BufWipeout", "LspDetach" }, { buffer = bufnr, group = group, callback = function(ev)
    if ev.event == "LspDetach" and ev.data and ev.data.client_id ~= client.id then return end   -- another server
    if not timer:is_closing() then timer:stop(); timer:close() end
    M.clear(bufnr)
    asked[bufnr] = nil
    vim.schedule(function() pcall(vim.api.nvim_del_augroup_by_id, group) end)
  end })
end

return M
