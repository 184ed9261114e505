-- Ghost text for Neovim 0.11 (0.12 has vim.lsp.inline_completion): after a pause in typing the server's
-- textDocument/inlineCompletion is asked for and its first item shown after the cursor as virtual text (the first
-- line inline, the others as virtual lines). Typing what it shows keeps the rest shown; the accept keys take all
-- of it, its next word or its next line (VS Code's accept next word / line) and tell the server: the item's
-- command when the whole suggestion was taken, tandem/didPartiallyAccept with the characters of a part.
local M = {}

M.ns = vim.api.nvim_create_namespace("tandem_ghost")
M.hl = "TandemSuggestion"

--- The ghost text's highlight: Comment unless a colorscheme or the user defines TandemSuggestion (`default`
--- keeps theirs); defined again after each colorscheme, which clears the groups it does not define.
function M.define_highlight()
  vim.api.nvim_set_hl(0, M.hl, { default = true, link = "Comment" })
end
M.define_highlight()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("tandem_highlight", { clear = true }), callback = M.define_highlight })

local status = require("tandem.status")
local shown = {}   -- bufnr -> { client, row, col, tick, text, item, full, req }

local function valid(bufnr) return vim.api.nvim_buf_is_valid(bufnr) end
local function buf(bufnr) return (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr end

function M.clear(bufnr)
  local s = shown[bufnr]
  shown[bufnr] = nil
  if s and s.req and not s.client:is_stopped() then pcall(s.client.cancel_request, s.client, s.req) end
  if valid(bufnr) then vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1) end
end

local function render(bufnr, s)
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local lines = vim.split(s.text, "\n", { plain = true })
  local below = {}
  for i = 2, #lines do below[#below + 1] = { { lines[i], M.hl } } end
  vim.api.nvim_buf_set_extmark(bufnr, M.ns, s.row, s.col, {
    virt_text = lines[1] ~= "" and { { lines[1], M.hl } } or nil,
    virt_text_pos = "inline",
    virt_lines = #below > 0 and below or nil,
  })
end

--- The suggestion shown in this buffer (0 or nil: the current one), the part not yet taken; or nil.
function M.text(bufnr)
  local s = shown[buf(bufnr)]
  return s and s.text or nil
end

local function here()
  local c = vim.api.nvim_win_get_cursor(0)
  return c[1] - 1, c[2]
end

--- Ask the server for a suggestion at the cursor (`invoked`: the user asked, so it completes where an automatic
--- request would skip).
function M.ask(client, bufnr, invoked)
  M.clear(bufnr)
  if not status.active(bufnr) then return end   -- snoozed, or the filetype switched off
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = invoked and 1 or 2 }
  local row, col = here()
  local s = { client = client, row = row, col = col, tick = vim.b[bufnr].changedtick }
  shown[bufnr] = s
  local ok, id = client:request("textDocument/inlineCompletion", params, function(err, result)
    if shown[bufnr] ~= s then return end   -- a newer ask, an edit or a clear came first
    s.req = nil
    local items = result and (result.items or result) or {}
    local item = not err and items[1] or nil
    local text = item and item.insertText
    if type(text) == "table" then text = text.value end
    local r, c = here()
    if not text or text == "" or not valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr
        or vim.b[bufnr].changedtick ~= s.tick or r ~= s.row or c ~= s.col or vim.fn.mode() ~= "i" then
      shown[bufnr] = nil
      return
    end
    s.text, s.full, s.item = text, text, item
    render(bufnr, s)
  end, bufnr)
  s.req = ok and id or nil
end

--- The server has a better suggestion where the last one was asked for (tandem/betterCompletion {uri, version,
--- position}: the whole page's answer, where a short prompt's is shown): ask again, while the buffer, its version
--- and the cursor are as they were; the server's cache answers. True when it asked.
function M.better(client, params)
  local bufnr = vim.api.nvim_get_current_buf()
  if type(params) ~= "table" or vim.uri_from_bufnr(bufnr) ~= params.uri or vim.fn.mode() ~= "i"
      or vim.b[bufnr].changedtick ~= params.version or type(params.position) ~= "table" then
    return false
  end
  local pos = vim.lsp.util.make_position_params(0, client.offset_encoding).position
  if pos.line ~= params.position.line or pos.character ~= params.position.character then return false end
  M.ask(client, bufnr, false)
  return true
end

--- After an edit in insert mode: typing what the suggestion shows keeps its rest shown (true); anything else
--- clears it (false: ask again).
function M.typed(bufnr)
  local s = shown[bufnr]
  if not s then return false end
  local tick = vim.b[bufnr].changedtick
  if tick == s.tick then return true end   -- our own insert (an accept)
  local r, c = here()
  if s.text and r == s.row and c > s.col then
    local line = vim.api.nvim_buf_get_lines(bufnr, r, r + 1, false)[1] or ""
    local typed = line:sub(s.col + 1, c)
    if #typed < #s.text and s.text:sub(1, #typed) == typed then
      s.text, s.col, s.tick = s.text:sub(#typed + 1), c, tick
      render(bufnr, s)
      return true
    end
  end
  M.clear(bufnr)
  return false
end

--- After a cursor move without an edit: a suggestion shown elsewhere is cleared.
function M.moved(bufnr)
  local s = shown[bufnr]
  if not s then return end
  local r, c = here()
  if r ~= s.row or c ~= s.col then M.clear(bufnr) end
end

--- The part of `text` an accept takes: "all", "word" (up to the end of the next word, with the spaces before
--- it) or "line" (the rest of the line; where the suggestion goes on below, the next line break and that line).
function M.piece(text, how)
  if how == "word" then
    return text:match("^%s*[%w_]+") or text:match("^%s*[^%w_%s]+") or text
  elseif how == "line" then
    local from = text:sub(1, 1) == "\n" and 2 or 1
    local nl = text:find("\n", from, true)
    return nl and text:sub(1, nl - 1) or text
  end
  return text
end

--- Take all, the next word or the next line of the suggestion shown in this buffer (0: the current one); false
--- when none is shown.
function M.accept(bufnr, how)
  bufnr = buf(bufnr)
  local s = shown[bufnr]
  if not (s and s.text and s.text ~= "") then return false end
  local piece = M.piece(s.text, how)
  local lines = vim.split(piece, "\n", { plain = true })
  vim.api.nvim_buf_set_text(bufnr, s.row, s.col, s.row, s.col, lines)
  local row = s.row + #lines - 1
  local col = (#lines == 1 and s.col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  local uri = vim.uri_from_bufnr(bufnr)
  local rest = s.text:sub(#piece + 1)
  if rest == "" then
    shown[bufnr] = nil
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
    local cmd = s.item and s.item.command
    if cmd then
      s.client:request("workspace/executeCommand", { command = cmd.command, arguments = cmd.arguments },
        function() end, bufnr)
    else
      s.client:notify("tandem/didAccept", { uri = uri, chars = #s.full })
    end
  else
    s.client:notify("tandem/didPartiallyAccept", { uri = uri, chars = #piece })
    s.text, s.row, s.col, s.tick = rest, row, col, vim.b[bufnr].changedtick
    render(bufnr, s)
  end
  return true
end

--- Ask after each pause in typing, on entering insert mode and after a move (an empty line just opened is
--- where a block helps most); keep the suggestion while it is typed through, clear it on a move or on leaving
--- insert mode.
function M.attach(client, bufnr, debounce_ms)
  local timer = vim.uv.new_timer()
  local tick = vim.b[bufnr].changedtick
  local function later()
    timer:stop()
    timer:start(debounce_ms, 0, vim.schedule_wrap(function()
      if client:is_stopped() or not valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr
          or vim.fn.mode() ~= "i" or shown[bufnr] then return end
      M.ask(client, bufnr, false)
    end))
  end
  local group = vim.api.nvim_create_augroup("tandem_ghost_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd("InsertEnter", { buffer = bufnr, group = group, callback = function()
    tick = vim.b[bufnr].changedtick
    later()
  end })
  vim.api.nvim_create_autocmd("TextChangedI", { buffer = bufnr, group = group, callback = function()
    tick = vim.b[bufnr].changedtick
    timer:stop()
    if not M.typed(bufnr) then later() end
  end })
  -- an edit's own move comes before its TextChangedI (which decides), so only a move without an edit counts
  vim.api.nvim_create_autocmd("CursorMovedI", { buffer = bufnr, group = group, callback = function()
    if vim.b[bufnr].changedtick ~= tick then return end
    M.moved(bufnr)
    if not shown[bufnr] then later() end
  end })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, { buffer = bufnr, group = group, callback = function()
    timer:stop()
    local s = shown[bufnr]
    if s and s.text and s.text ~= "" and not s.client:is_stopped() then
      -- Esc (or leaving) with a suggestion shown: the server counts it dismissed (typing over it counts itself)
      s.client:notify("tandem/didDismiss", { uri = vim.uri_from_bufnr(bufnr) })
    end
    M.clear(bufnr)
  end })
  vim.api.nvim_create_autocmd({ "BufWipeout", "LspDetach" }, { buffer = bufnr, group = group, callback = function()
    if not timer:is_closing() then timer:stop(); timer:close() end
    M.clear(bufnr)
    vim.schedule(function() pcall(vim.api.nvim_del_augroup_by_id, group) end)
  end })
end

return M
