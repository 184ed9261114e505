-- :checkhealth tandem — what a user checks first when no suggestion comes: the Neovim version and its path
-- (ghost text or popup), the server command, the language server attached, its models ready.
local M = {}

function M.check()
  local h = vim.health
  h.start("tandem")
  local v = vim.version()
  local how = require("tandem").config.suggestions
  local ver = string.format("Neovim %d.%d.%d: ", v.major, v.minor, v.patch)
  if not vim.lsp.completion then
    h.error("Neovim 0.11 or newer is needed (vim.lsp.completion)")
  elseif how == "native" and vim.lsp.inline_completion then
    h.ok(ver .. "Neovim's ghost text (vim.lsp.inline_completion; <Tab> accepts)")
  elseif how == "popup" then
    h.ok(ver .. "completions in the popup (suggestions = \"popup\")")
  else
    if how == "native" then h.warn(ver .. "suggestions = \"native\" needs 0.12 (vim.lsp.inline_completion)") end
    h.ok(ver .. "the plugin's ghost text (<Tab>, <M-Right> a word, <M-C-Right> a line, <M-\\> asks)")
  end
  local cfg = require("tandem").config
  local exe = cfg.cmd and cfg.cmd[1]
  if exe and vim.fn.executable(exe) == 1 then
    h.ok("server command: " .. vim.fn.exepath(exe))
  else
    h.error("server command not found: " .. tostring(exe),
      { "set cmd = { '/path/to/tandem/.venv/bin/tandem', 'serve' } in require('tandem').setup()",
        "or set it up: `make demo` in the checkout (a venv with tandem, the models fetched)" })
  end
  local client = vim.lsp.get_clients({ name = "tandem" })[1]
  if not client then
    h.warn("no tandem server is running (it starts with a file of: " .. table.concat(cfg.filetypes, ", ") .. ")")
    return
  end
  h.ok("server attached (id " .. client.id .. ")")
  local s = require("tandem").stats()
  if not s then
    h.warn("the server did not answer tandem/stats within 5 s")
  elseif s.load_error then
    h.error("models could not be loaded: " .. s.load_error, { "run `tandem models pull`" })
  elseif not s.ready then
    h.info("the models are loading")
  else
    h.ok(string.format("models ready; %d of %d suggestions accepted", s.suggestions.accepted, s.suggestions.shown))
  end
end

return M
