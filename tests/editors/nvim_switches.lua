-- Driven by tests/editors/test_neovim_switches.py: `nvim --headless --clean -u tests/editors/nvim_switches.lua FILE`
-- (a Go file), the plugin's ghost text, the real server and models. The statusline component through a real
-- 'statusline' as the server's tandem/status pushes come (loading, ready), :TandemSnooze, :TandemResume and
-- :TandemToggleLanguage (no request asked while they hold, asked again after), :Tandem disable and enable,
-- :checkhealth tandem with the server's tandem/health report, :TandemPullModels. Writes what happened as JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
local session = require("nvim_session")
local result, note, finish, wait_until = session.result, session.note, session.finish, session.wait_until

local messages = {}
vim.notify = function(msg) messages[#messages + 1] = msg end

vim.opt.rtp:prepend(repo .. "/editors/neovim")
vim.o.laststatus = 2
vim.o.statusline = "%{v:lua.require'tandem'.statusline()}"
local tandem = require("tandem")
tandem.setup({ cmd = { os.getenv("TANDEM_PYTHON"), "-m", "lsp_server.cli.main", "serve" }, cursor_rest_ms = 0 })

local function line() return vim.api.nvim_eval_statusline(vim.o.statusline, {}).str end
result.seen = {}
vim.api.nvim_create_autocmd("User", { pattern = "TandemStatus", callback = function()
  local now = line()
  if result.seen[#result.seen] ~= now then result.seen[#result.seen + 1] = now end
end })

-- types `keys` at the end of the blank line and tells how many suggestions the plugin asked for within 2 s
local asks = 0
local function asked_while_typing(keys)
  local before = asks
  vim.api.nvim_input("A" .. keys)
  wait_until(function() return asks > before end, 2)
  local n = asks - before
  vim.api.nvim_input("<Esc>")
  wait_until(function() return vim.fn.mode() == "n" end, 5)
  return n
end

local function cmd_line(cmd)
  vim.cmd(cmd)
  return line()
end

session.run(function()
  if not session.attached() then return finish(false) end
  result.at_start = line()
  if not session.models_ready() then return finish(false) end
  if not wait_until(function() return line() == "Tandem ready" end, 10) then
    note("statusline not ready: " .. line()); return finish(false)
  end
  local client = vim.lsp.get_clients({ name = "tandem", bufnr = 0 })[1]
  local request = client.request
  client.request = function(self, method, ...)
    if method == "textDocument/inlineCompletion" then asks = asks + 1 end
    return request(self, method, ...)
  end
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for i = #lines, 1, -1 do
    if lines[i]:match("^%s+$") then vim.api.nvim_win_set_cursor(0, { i, 0 }); break end
  end

  result.snoozed = cmd_line("TandemSnooze")
  result.asks_snoozed = asked_while_typing("x")
  result.resumed = cmd_line("TandemResume")
  result.asks_resumed = asked_while_typing("y")
  result.snoozed_5 = cmd_line("TandemSnooze 5")
  result.snooze_0 = cmd_line("TandemSnooze 0")
  vim.cmd("TandemSnooze soon")
  result.bad_snooze = messages[#messages]

  result.language_off = cmd_line("TandemToggleLanguage")
  result.asks_language_off = asked_while_typing("z")
  result.python_off = cmd_line("TandemToggleLanguage python")   -- another filetype: this buffer stays off
  result.language_on = cmd_line("TandemToggleLanguage go")
  result.asks_language_on = asked_while_typing("w")
  vim.cmd("TandemToggleLanguage python")

  vim.cmd("Tandem disable")
  wait_until(function() return line() == "Tandem off" end, 10)
  result.disabled = line()
  vim.cmd("Tandem enable")
  wait_until(function() return line() == "Tandem ready" end, 10)
  result.enabled = line()

  local h = tandem.health(0)
  result.health_text = h and h.text
  vim.cmd("checkhealth tandem")
  result.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("tabclose")

  vim.cmd("TandemPullModels")
  if not wait_until(function() return messages[#messages]:match("^Tandem: models ready")
      or messages[#messages]:match("failed") end, 180) then
    note("the pull did not finish")
  end
  result.pulled = messages[#messages]
  finish(true)
end)
