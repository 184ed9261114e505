-- Driven by tests/editors/test_neovim.py: `nvim --headless --clean -u tests/editors/nvim_ghost.lua FILE` (nvim 0.11), the plugin
-- from editors/neovim with its own ghost text, the real server. At the empty line of a function body waits for
-- the ghost text, takes its next word (<M-Right>), its next line (<M-C-Right>) and the rest (<Tab>);
-- writes what happened as JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
local session = require("nvim_session")
local result, note, finish, wait_until = session.result, session.note, session.finish, session.wait_until

vim.opt.rtp:prepend(repo .. "/editors/neovim")
local tandem = require("tandem")
-- the whole block, however fast the machine is today: no time budget, no early answer of its first lines, the
-- page's prompt rather than a fast one (the test takes a word, a line and the rest of a block)
tandem.setup({ cmd = { os.getenv("TANDEM_PYTHON"), "-m", "lsp_server.cli.main", "serve" },
               settings = { timeBudgetMs = 30000, earlyAnswerMs = 0, promptBudgetMs = -1 }, cursor_rest_ms = 0 })
local ghost = require("tandem.ghost")

local function suggestions()
  local s = tandem.stats(0)
  return s and s.suggestions or {}
end

session.run(function()
  if not session.attached() then return finish(false) end
  if not session.models_ready() then return finish(false) end
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local row
  for i = #lines, 1, -1 do
    if lines[i]:match("^%s+$") then row = i; break end
  end
  result.below = lines[row + 1]
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.api.nvim_input("A" .. os.getenv("TANDEM_TYPE"))
  if not wait_until(function() return vim.fn.mode() == "i" and (ghost.text(0) or "") ~= "" end, 90) then
    note("no ghost text"); result.line = vim.api.nvim_get_current_line(); return finish(false)
  end
  note("ghost text")
  result.before = vim.api.nvim_get_current_line()
  result.full = ghost.text(0)
  local accepted = suggestions().accepted or 0
  result.marks = #vim.api.nvim_buf_get_extmarks(0, ghost.ns, 0, -1, {})
  vim.api.nvim_input("<M-Right>")
  wait_until(function() return vim.api.nvim_get_current_line() ~= result.before end, 10)
  result.after_word = vim.api.nvim_get_current_line()
  result.rest_after_word = ghost.text(0) or ""
  wait_until(function() return (suggestions().partly_accepted or 0) >= 1 end, 10)
  result.partly_after_word = suggestions().partly_accepted
  local at_line = vim.api.nvim_get_current_line()
  vim.api.nvim_input("<M-C-Right>")
  wait_until(function()
    return vim.api.nvim_get_current_line() ~= at_line or vim.api.nvim_win_get_cursor(0)[1] ~= row
  end, 10)
  result.rest_after_line = ghost.text(0) or ""
  if result.rest_after_line ~= "" then vim.api.nvim_input("<Tab>") end
  wait_until(function() return (suggestions().accepted or 0) > accepted end, 10)
  result.accepted = (suggestions().accepted or 0) - accepted
  result.partly = suggestions().partly_accepted
  vim.api.nvim_input("<Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 10)
  result.after = vim.api.nvim_buf_get_lines(0, row - 1, row - 1 + #vim.split(result.before .. result.full, "\n") + 1,
                                            false)
  result.marks_after = #vim.api.nvim_buf_get_extmarks(0, ghost.ns, 0, -1, {})
  finish(true)
end)

