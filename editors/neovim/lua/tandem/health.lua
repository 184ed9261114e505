-- :checkhealth tandem — what a user checks first when no suggestion comes. This Neovim: its version and the
-- suggestion path, whether next edits are on, the server command and its version, a snooze or filetypes switched
-- off. Then the server's own report (tandem/health: the one `tandem doctor` prints, with the settings Neovim sent
-- in it), or, with no server running, `tandem doctor`'s.
local M = {}

local INSTALL = { "install the server: `make tool` in a checkout of Tandem (pipx; `tandem` lands in ~/.local/bin), "
                  .. "or `make demo` for a venv in the checkout, then `tandem models pull` (or :TandemPullModels)",
                  "or point the plugin at it: require('tandem').setup({ cmd = { '/path/to/tandem', 'serve' } })" }

-- the server command with `serve` replaced by `args`
local function with(cmd, args)
  cmd = vim.deepcopy(cmd)
  if cmd[#cmd] == "serve" then table.remove(cmd) end
  return vim.list_extend(cmd, args)
end

local function run(cmd, timeout_ms)
  local ok, proc = pcall(vim.system, cmd, { text = true })
  if not ok then return nil, tostring(proc) end
  local r = proc:wait(timeout_ms)
  if r.code ~= 0 then return nil, vim.trim((r.stderr or "") .. (r.stdout or "")) end
  return vim.trim(r.stdout or "")
end

-- one item, so that the report's table keeps its indentation
local function report(h, text)
  h.info(vim.trim(text))
end

function M.check()
  local h = vim.health
  local tandem = require("tandem")
  local status = require("tandem.status")
  local cfg = tandem.config
  h.start("tandem: this Neovim")
  local v = vim.version()
  local how = cfg.suggestions
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
  if (cfg.settings or {}).nextEdit == false then
    h.info("next edit: off (settings.nextEdit = false)")
  else
    h.ok(string.format("next edit: asked %d ms after an edit rests (:TandemNextEdit asks now)", cfg.next_edit_ms or 0))
  end
  local exe = cfg.cmd and cfg.cmd[1]
  local found = exe and vim.fn.executable(exe) == 1
  if found then
    local version, err = run(with(cfg.cmd, { "--version" }), 10000)
    if version then
      h.ok("server command: " .. vim.fn.exepath(exe) .. " (" .. version .. ")")
    else
      h.warn("server command: " .. vim.fn.exepath(exe) .. ", but `--version` failed: " .. tostring(err),
        { "an older Tandem than this plugin's: install it again", INSTALL[1] })
    end
  else
    h.error("server command not found: " .. tostring(exe), INSTALL)
  end
  if status.snoozed() then h.info(string.format("snoozed, %d min left (:TandemResume ends it)", status.snooze_left())) end
  local off = vim.tbl_keys(status.off)
  if #off > 0 then
    table.sort(off)
    h.info("switched off for this session: " .. table.concat(off, ", ") .. " (:TandemToggleLanguage)")
  end

  local client = vim.lsp.get_clients({ name = "tandem" })[1]
  if not client then
    h.warn("no tandem server is running (it starts with a file of: " .. table.concat(cfg.filetypes, ", ") .. ")")
    if found then
      h.start("tandem: `tandem doctor` (no editor settings: no server is running)")
      local text, err = run(with(cfg.cmd, { "doctor" }), 30000)
      if text then report(h, text) else h.warn("`tandem doctor` failed: " .. tostring(err)) end
    end
    return
  end
  h.start("tandem: the server (tandem/health)")
  h.ok("server attached (id " .. client.id .. ")")
  local res, err = tandem.health(0)
  if res and type(res.text) == "string" then
    report(h, res.text)
  else
    h.warn("the server did not answer tandem/health: " .. (err and vim.inspect(err) or "no answer within 5 s"),
      { "an older server than this plugin: install it again" })
  end
  local s = tandem.stats()
  if not s then
    h.warn("the server did not answer tandem/stats within 5 s")
  elseif s.load_error and s.load_error ~= vim.NIL then
    h.error("models could not be loaded: " .. s.load_error, { "run `tandem models pull` (or :TandemPullModels)" })
  elseif not s.ready then
    h.info("the models are loading")
  else
    h.ok(string.format("models ready; %d of %d suggestions accepted", s.suggestions.accepted, s.suggestions.shown))
  end
end

return M
