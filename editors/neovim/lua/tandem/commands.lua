-- The user commands: :Tandem [status|stats|enable|disable|toggle|restart], :TandemSnooze [minutes],
-- :TandemResume, :TandemToggleLanguage [filetype], :TandemPullModels, :TandemNextEdit. Defined by plugin/tandem.lua
-- at start-up (before setup(), so a lazy-loading plugin manager can load the plugin on them) and again by
-- require("tandem").
local M = {}

M.SNOOZE_MINUTES = 30

local function tandem() return require("tandem") end
local function status() return require("tandem.status") end

local function show_stats()
  tandem().stats(0, vim.schedule_wrap(function(s)
    if not s then return vim.notify("Tandem: the server is not running", vim.log.levels.WARN) end
    local buf = vim.api.nvim_create_buf(false, true)   -- a scratch buffer: never saved, never sent
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(vim.json.encode(s), "\n"))
    vim.bo[buf].filetype = "json"
    vim.cmd("split")
    vim.api.nvim_win_set_buf(0, buf)
    if vim.fn.executable("python3") == 1 then vim.cmd("silent %!python3 -m json.tool") end
    vim.bo[buf].modified = false
  end))
end

M.tandem = {
  status = function()
    tandem().stats(0, vim.schedule_wrap(function(s)
      if not s then return vim.notify("Tandem: not running") end
      local state = s.load_error and ("models could not be loaded: " .. s.load_error)
        or (s.ready and "ready" or "loading models")
      if status().snoozed() then state = state .. string.format(" (snoozed, %d min left)", status().snooze_left()) end
      vim.notify(string.format("Tandem: %s; %s tok/s; %d of %d suggestions accepted", state,
        s.tok_s and string.format("%.1f", s.tok_s) or "-", s.suggestions.accepted, s.suggestions.shown))
    end))
  end,
  stats = show_stats,
  enable = function() tandem().set_enabled(true) end,
  disable = function() tandem().set_enabled(false) end,
  toggle = function() tandem().set_enabled(tandem().config.settings.enabled == false) end,
  restart = function() tandem().restart() end,
}

--- `tandem models pull` with the server command's program (its last argument `serve` replaced), in the
--- background; `done(ok, output)` afterwards, else a message says how it went.
function M.pull_models(done)
  local cmd = vim.deepcopy(tandem().config.cmd)
  if cmd[#cmd] == "serve" then table.remove(cmd) end
  vim.list_extend(cmd, { "models", "pull" })
  local function finish(ok, text)
    if done then return done(ok, text) end
    local lines = vim.split(vim.trim(text), "\n")
    local tail = table.concat(vim.list_slice(lines, math.max(1, #lines - 4)), "\n")
    if ok then
      local running = #vim.lsp.get_clients({ name = "tandem" }) > 0
      vim.notify("Tandem: models ready" .. (running and " (:Tandem restart loads them)" or "") .. "\n" .. tail)
    else
      vim.notify("Tandem: `" .. table.concat(cmd, " ") .. "` failed:\n" .. tail, vim.log.levels.ERROR)
    end
  end
  vim.notify("Tandem: pulling the models (" .. table.concat(cmd, " ") .. ")")
  local ok, err = pcall(vim.system, cmd, { text = true }, vim.schedule_wrap(function(r)
    finish(r.code == 0, (r.stdout or "") .. (r.stderr or ""))
  end))
  if not ok then finish(false, tostring(err)) end
end

function M.create()
  local cmd = vim.api.nvim_create_user_command
  cmd("Tandem", function(opts)
    local run = M.tandem[opts.fargs[1] or "status"]
    if not run then
      return vim.notify("Tandem: no such command " .. opts.fargs[1]
        .. " (status, stats, enable, disable, toggle, restart)", vim.log.levels.ERROR)
    end
    run()
  end, { nargs = "?", complete = function() return vim.tbl_keys(M.tandem) end,
         desc = "Tandem: status | stats | enable | disable | toggle | restart" })

  cmd("TandemSnooze", function(opts)
    local minutes = opts.args == "" and M.SNOOZE_MINUTES or tonumber(opts.args)
    if not minutes or minutes < 0 then
      return vim.notify("Tandem: :TandemSnooze takes minutes (a number, 0 ends a snooze), not " .. opts.args,
        vim.log.levels.ERROR)
    end
    status().snooze(minutes)
    vim.notify(minutes > 0 and string.format("Tandem: snoozed for %s minutes", minutes) or "Tandem: awake")
  end, { nargs = "?", desc = "Tandem: no suggestions for N minutes (default 30; 0 ends it)" })

  cmd("TandemResume", function()
    status().snooze(0)
    vim.notify("Tandem: awake")
  end, { desc = "Tandem: end a snooze" })

  cmd("TandemToggleLanguage", function(opts)
    local ft = opts.args ~= "" and opts.args or vim.bo.filetype
    if ft == "" then return vim.notify("Tandem: this buffer has no filetype", vim.log.levels.ERROR) end
    local on = status().toggle_language(ft)
    vim.notify(string.format("Tandem: %s for %s (this session)", on and "on" or "off", ft))
  end, { nargs = "?", complete = function() return tandem().config.filetypes end,
         desc = "Tandem: switch suggestions off (or on) for a filetype, this session" })

  cmd("TandemPullModels", function() M.pull_models() end,
    { desc = "Tandem: fetch and verify the models (tandem models pull)" })

  cmd("TandemNextEdit", function()
    local bufnr = vim.api.nvim_get_current_buf()
    if #vim.lsp.get_clients({ name = "tandem", bufnr = bufnr }) == 0 then
      return vim.notify("Tandem: no tandem server is attached to this buffer", vim.log.levels.WARN)
    end
    if (tandem().config.settings or {}).nextEdit == false then
      return vim.notify("Tandem: next edits are off (settings.nextEdit = false)", vim.log.levels.WARN)
    end
    require("tandem.next_edit").ask(bufnr)
  end, { desc = "Tandem: ask for the edit that follows the last one, now" })
end

return M
