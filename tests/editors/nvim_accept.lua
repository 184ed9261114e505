-- Driven by tests/editors/test_neovim.py: `nvim --headless --clean -u tests/editors/nvim_accept.lua FILE` (nvim 0.11), the
-- plugin from editors/neovim, the real server. Types a statement into an empty function body as keys, waits
-- for the popup completion the plugin asks for, accepts it with <C-y>, and writes what happened as JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
local session = require("nvim_session")
local result, note, finish, wait_until = session.result, session.note, session.finish, session.wait_until

vim.opt.rtp:prepend(repo .. "/editors/neovim")
vim.opt.completeopt = { "menuone", "noinsert" }
require("tandem").setup({ cmd = { os.getenv("TANDEM_PYTHON"), "-m", "lsp_server.cli.main", "serve" },
                          settings = { timeBudgetMs = 30000 }, suggestions = "popup" })

session.run(function()
  if not session.attached() then return finish(false) end
  note("attached")
  if not session.models_ready() then return finish(false) end
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local row
  for i = #lines, 1, -1 do
    if lines[i]:match("^%s+$") then row = i; break end
  end
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  -- the plugin reports the move (no edit in it) once the cursor rests, and the server fills there
  if not wait_until(function()
    local s = require("tandem").stats(0)
    result.cursor_moves = s and s.fill and s.fill.cursor_moves or 0
    return result.cursor_moves > 0
  end, 30) then
    note("no cursor report"); return finish(false)
  end
  note("cursor reported")
  vim.api.nvim_input("A" .. os.getenv("TANDEM_TYPE"))
  if not wait_until(function()
    return vim.fn.mode() == "i" and vim.fn.pumvisible() == 1 and #vim.fn.complete_info({ "items" }).items > 0
  end, 90) then
    note("no popup"); result.line = vim.api.nvim_get_current_line(); return finish(false)
  end
  note("popup")
  result.before = vim.api.nvim_get_current_line()
  local item = vim.fn.complete_info({ "items" }).items[1]
  result.word, result.abbr = item.word, item.abbr
  vim.api.nvim_input("<C-y><Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 10)
  result.after = vim.api.nvim_buf_get_lines(0, row - 1, row + 3, false)
  local s = require("tandem").stats(0)
  result.loads = s and s.loads   -- the client's configuration after `initialized` must not load them again
  finish(true)
end)

