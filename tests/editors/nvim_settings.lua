-- Driven by tests/editors/test_neovim_settings.py: `nvim --headless --clean -u tests/editors/nvim_settings.lua FILE`,
-- the plugin set up with the settings in $TANDEM_SETTINGS (JSON), the real server (with a `backend` from its
-- config.toml it loads no model). Reads the settings in effect from tandem/stats after the start, after
-- :Tandem disable, and after the settings table is emptied and sent again; writes them as JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
local session = require("nvim_session")
local result, note, finish, wait_until = session.result, session.note, session.finish, session.wait_until

vim.opt.rtp:prepend(repo .. "/editors/neovim")
local tandem = require("tandem")
tandem.setup({ cmd = { os.getenv("TANDEM_PYTHON"), "-m", "lsp_server.cli.main", "serve" },
               settings = vim.json.decode(os.getenv("TANDEM_SETTINGS"), { luanil = { object = true } }),
               cursor_rest_ms = 0 })

-- the server's settings list as { key = { value, origin } }, once tandem/stats answers with one and `ready(s)`
-- (nil, noted, when none comes within 30 s)
local function settings_when(step, ready)
  local found, last
  if wait_until(function()
    local s = tandem.stats(0)
    last = s and s.settings
    if not (type(last) == "table" and vim.islist(last) and #last > 0) then return false end
    found = {}
    for _, e in ipairs(last) do found[e.key] = { value = e.value, origin = e.origin } end
    return ready(found)
  end, 30) then
    note(step)
    return found
  end
  note(step .. ": not within 30 s; tandem/stats settings: " .. vim.inspect(last):sub(1, 300))
end

session.run(function()
  if not session.attached() then return finish(false) end
  result.start = settings_when("start", function(s) return s.backend ~= nil end)
  if not result.start then return finish(false) end
  -- the backend does not answer: the load fails, the server pushes its error, the statusline says it
  wait_until(function() return tandem.state() == "error" end, 30)
  result.statusline = tandem.statusline()
  vim.cmd("Tandem disable")
  result.disabled = settings_when("disabled", function(s) return s.enabled and s.enabled.value == false end)
  tandem.config.settings = {}
  tandem.send_settings()
  result.emptied = settings_when("emptied", function(s) return s.enabled and s.enabled.origin ~= "editor" end)
  finish(result.disabled ~= nil and result.emptied ~= nil)
end)
