-- What tests/editors/nvim_accept.lua, tests/editors/nvim_ghost.lua and tests/editors/nvim_offer.lua share: a result written as JSON to $TANDEM_RESULT, steps
-- noted on the way, and the test run as a coroutine resumed by a timer, so the main loop handles input, LSP and
-- autocommands while it waits.
local M = { result = { steps = {} } }

function M.note(s) table.insert(M.result.steps, s) end

function M.finish(ok)
  M.result.ok = ok
  local f = io.open(os.getenv("TANDEM_RESULT"), "w"); f:write(vim.json.encode(M.result)); f:close()
  vim.cmd("qall!")
end

function M.wait_until(cond, seconds)
  local deadline = vim.uv.now() + seconds * 1000
  while not cond() do
    if vim.uv.now() > deadline then return false end
    coroutine.yield()
  end
  return true
end

--- The plugin's client attached to the current buffer (within 60 s); noted where not.
function M.attached()
  if M.wait_until(function() return #vim.lsp.get_clients({ name = "tandem", bufnr = 0 }) > 0 end, 60) then
    return true
  end
  M.note("no client attached")
  return false
end

--- The server's models loaded (within 180 s; a failed load ends the wait); noted "ready" or why not.
function M.models_ready()
  local stats
  if M.wait_until(function()
    stats = require("tandem").stats(0)
    return stats ~= nil and (stats.ready == true or (stats.load_error ~= nil and stats.load_error ~= vim.NIL))
  end, 180) and stats.ready then
    M.note("ready")
    return true
  end
  M.note("models not ready")
  return false
end

function M.run(fn)
  local test = coroutine.create(fn)
  local timer = vim.uv.new_timer()
  timer:start(100, 50, vim.schedule_wrap(function()
    if coroutine.status(test) == "suspended" then
      local ok, err = coroutine.resume(test)
      if not ok then M.note("error: " .. tostring(err)); M.finish(false) end
    end
  end))
end

return M
