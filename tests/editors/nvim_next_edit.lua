-- Driven by tests/editors/test_neovim_next_edit.py: `nvim --headless --clean -u tests/editors/nvim_next_edit.lua`
-- (nvim 0.11), the plugin from editors/neovim, the real server and models. For each scenario of $TANDEM_SCENARIOS
-- (JSON: file, row, col, new, key, insert) opens the file, renames the word at (row, col) to `new` with ciw (staying
-- in insert mode where `insert`), waits for the next edit's preview, presses `key` (<Tab> or <Esc>) and writes what
-- was shown, the buffer (its 'eol' and 'fileformat'), the server's copy of it, and the server's next_edit statistics
-- before and after, as JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
local session = require("nvim_session")
local result, note, finish, wait_until = session.result, session.note, session.finish, session.wait_until

vim.opt.rtp:prepend(repo .. "/editors/neovim")
local tandem = require("tandem")
tandem.setup({ cmd = { os.getenv("TANDEM_PYTHON"), "-m", "lsp_server.cli.main", "serve" }, cursor_rest_ms = 0 })
local next_edit = require("tandem.next_edit")

local function next_stats()
  local s = tandem.stats(0)
  return s and s.next_edit or {}
end

local function lines() return vim.api.nvim_buf_get_lines(0, 0, -1, false) end

local function preview()
  local p = { old_rows = {}, new = {} }
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, next_edit.ns, 0, -1, { details = true })) do
    local d = m[4]
    if d.line_hl_group then table.insert(p.old_rows, m[2]) end
    for _, l in ipairs(d.virt_lines or {}) do table.insert(p.new, l[1][1]) end
  end
  return p
end

session.run(function()
  result.scenarios = {}
  for i, sc in ipairs(vim.json.decode(os.getenv("TANDEM_SCENARIOS"))) do
    local r = { name = sc.name }
    result.scenarios[i] = r
    vim.cmd.edit(sc.file)
    if not session.attached() then return finish(false) end
    if i == 1 and not session.models_ready() then return finish(false) end
    r.before_edit = lines()
    vim.api.nvim_win_set_cursor(0, { sc.row, sc.col })
    vim.api.nvim_input("ciw" .. sc.new .. (sc.insert and "" or "<Esc>"))
    if not wait_until(function()
      return vim.api.nvim_get_current_line():find(sc.new, 1, true) ~= nil
        and vim.fn.mode() == (sc.insert and "i" or "n")
    end, 10) then
      note(sc.name .. ": the rename was not typed"); return finish(false)
    end
    r.edited = lines()
    local t0 = vim.uv.now()
    if not wait_until(function() return next_edit.shown(0) ~= nil end, 180) then
      note(sc.name .. ": no preview"); r.stats = next_stats(); r.now = lines(); return finish(false)
    end
    note(sc.name .. ": preview")
    r.wait_ms = vim.uv.now() - t0
    r.mode_shown = vim.fn.mode()
    r.shown = next_edit.shown(0)
    r.preview = preview()
    r.stats_before = next_stats()
    r.buffer_shown = lines()
    local tick = vim.b.changedtick
    vim.api.nvim_input(sc.key)
    wait_until(function() return next_edit.shown(0) == nil end, 10)
    local key = sc.key == "<Tab>" and "accepted" or "dismissed"
    wait_until(function() return (next_stats()[key] or 0) > (r.stats_before[key] or 0) end, 10)
    if sc.key == "<Tab>" then wait_until(function() return vim.b.changedtick ~= tick end, 5) end
    wait_until(function() return vim.fn.mode() == "n" end, 5)
    r.after = lines()
    r.eol = vim.bo.eol
    r.fileformat = vim.bo.fileformat
    -- the server's copy, once the accepted edit reached it: what a file without a final newline keeps
    local client = vim.lsp.get_clients({ name = "tandem", bufnr = 0 })[1]
    wait_until(function()
      local res = client:request_sync("tandem/document", { uri = vim.uri_from_bufnr(0), text = true }, 5000, 0)
      r.server_text = res and res.result and res.result.text
      return res and res.result and res.result.version == next_edit.version(0)
    end, 10)
    r.mode_after = vim.fn.mode()
    r.marks_after = #vim.api.nvim_buf_get_extmarks(0, next_edit.ns, 0, -1, {})
    r.stats_after = next_stats()
  end
  finish(true)
end)
