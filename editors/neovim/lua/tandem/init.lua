-- Tandem for Neovim: starts `tandem serve` for the configured filetypes and turns on completion from it: ghost
-- text of the plugin's own (ghost.lua: accept all, the next word or the next line), or with `suggestions` Neovim's
-- own ghost text on 0.12+ ("native", vim.lsp.inline_completion) or the completion popup ("popup",
-- vim.lsp.completion); and tells the server where the cursor went (tandem/didMoveCursor) so it fills its KV cache
-- there before the first key; and once an edit rests, shows the edit that follows it (next_edit.lua). What it
-- shows of the server's state, a snooze and filetypes switched off are in status.lua (the statusline component),
-- the commands in commands.lua, :checkhealth tandem in health.lua.
local M = {}
local status = require("tandem.status")

M.defaults = {
  cmd = { "tandem", "serve" },
  filetypes = vim.deepcopy(require("tandem.languages")),
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  -- the server's settings you set (docs/settings.md), and only those: the server lays them over its own defaults,
  -- ~/.config/tandem/config.toml and the workspace's tandem.toml
  settings = {},
  debounce_ms = 150,      -- 0.11: ask for a completion this long after the last keystroke
  cursor_rest_ms = 150,   -- report a cursor move (no edit in it) once the cursor has rested this long; 0: never
  -- "ghost" (the plugin's ghost text), "native" (0.12+: vim.lsp.inline_completion; accept only) or "popup" (the
  -- completion menu, <C-y>)
  suggestions = "ghost",
  -- accept: the whole suggestion ("ghost", "native"); accept_word / accept_line: its next word or line, and
  -- suggest: ask here and now, where an automatic request would skip ("ghost"); false: not mapped
  keymaps = { accept = "<Tab>", accept_word = "<M-Right>", accept_line = "<M-C-Right>", suggest = "<M-\\>",
              -- the next edit's keys, mapped only while one is shown (normal and insert mode)
              accept_edit = "<Tab>", dismiss_edit = "<Esc>" },
  next_edit_ms = 500,     -- ask for the next edit once an edit has rested this long (settings.nextEdit = false: never)
}

M.config = vim.deepcopy(M.defaults)

local function ask_later(bufnr)
  local timer = vim.uv.new_timer()
  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChangedP" }, {
    buffer = bufnr,
    group = vim.api.nvim_create_augroup("tandem_autotrigger_" .. bufnr, { clear = true }),
    callback = function()
      timer:stop()
      timer:start(M.config.debounce_ms, 0, vim.schedule_wrap(function()
        if vim.api.nvim_get_current_buf() == bufnr and vim.fn.mode() == "i" and status.active(bufnr) then
          vim.lsp.completion.get()
        end
      end))
    end,
  })
end

-- moves that come with an edit need no report: the server sees the edit (changedtick tells them apart)
local function report_moves(client, bufnr)
  if (M.config.cursor_rest_ms or 0) <= 0 then return end
  local timer = vim.uv.new_timer()
  local tick = vim.b[bufnr].changedtick
  local function report(after_switch)
    if timer:is_closing() then return end
    local now = vim.b[bufnr].changedtick
    local edited = now ~= tick
    tick = now
    if edited and not after_switch then return end
    timer:stop()
    timer:start(M.config.cursor_rest_ms, 0, vim.schedule_wrap(function()
      if client:is_stopped() or not vim.api.nvim_buf_is_valid(bufnr)
          or vim.api.nvim_get_current_buf() ~= bufnr or not status.active(bufnr) then return end
      local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
      client:notify("tandem/didMoveCursor", { uri = params.textDocument.uri, position = params.position })
    end))
  end
  local group = vim.api.nvim_create_augroup("tandem_cursor_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI" }, {
    buffer = bufnr, group = group, callback = function() report(false) end })
  vim.api.nvim_create_autocmd("BufEnter", { buffer = bufnr, group = group, callback = function() report(true) end })
  vim.api.nvim_create_autocmd({ "BufWipeout", "LspDetach" }, { buffer = bufnr, group = group, callback = function()
    if not timer:is_closing() then timer:stop(); timer:close() end
    vim.schedule(function() pcall(vim.api.nvim_del_augroup_by_id, group) end)
  end })
end

local ACCEPT_DESC = "Tandem: accept the suggestion"
local ACCEPT_DESCS = { all = ACCEPT_DESC, word = ACCEPT_DESC .. "'s next word", line = ACCEPT_DESC .. "'s next line" }

-- What the accept key did before Tandem mapped it (a completion or snippet plugin's <Tab>, or the key itself):
-- done when there is no suggestion, so those plugins keep their key. Our mapping is not an expr one, so a
-- plugin's function may change the buffer.
function M.fallback(key)
  local prev = vim.fn.maparg(key, "i", false, true)
  if vim.tbl_isempty(prev) or (prev.desc or ""):sub(1, #ACCEPT_DESC) == ACCEPT_DESC then
    return function() vim.api.nvim_feedkeys(vim.keycode(key), "ni", false) end
  end
  local mode = (prev.noremap == 1 and "n" or "m") .. "i"   -- i: before what is typed next
  if prev.callback then
    return function()
      local keys = prev.callback()
      if prev.expr == 1 and type(keys) == "string" and keys ~= "" then
        vim.api.nvim_feedkeys(prev.replace_keycodes == 1 and vim.keycode(keys) or keys, mode, false)
      end
    end
  end
  return function()
    local rhs = prev.expr == 1 and vim.api.nvim_eval(prev.rhs) or prev.rhs
    vim.api.nvim_feedkeys(vim.keycode(rhs), mode, false)
  end
end

function M.on_attach(client, bufnr)
  report_moves(client, bufnr)
  require("tandem.next_edit").attach(client, bufnr, M.config.next_edit_ms)
  local how = M.config.suggestions
  if how == "native" and vim.lsp.inline_completion then
    vim.lsp.inline_completion.enable(status.active(bufnr), { bufnr = bufnr })
    local key = M.config.keymaps.accept
    if key then
      local fallback = M.fallback(key)
      vim.keymap.set("i", key, function()
        if not vim.lsp.inline_completion.get() then fallback() end
      end, { buffer = bufnr, desc = ACCEPT_DESC })
    end
  elseif how == "popup" then
    -- the popup, asked for after each pause in typing (the server's trigger characters alone
    -- would ask too rarely for code completion)
    vim.lsp.completion.enable(status.active(bufnr), client.id, bufnr, { autotrigger = true })
    ask_later(bufnr)
  else
    local ghost = require("tandem.ghost")
    ghost.attach(client, bufnr, M.config.debounce_ms)
    local keys = M.config.keymaps
    for how, key in pairs({ all = keys.accept, word = keys.accept_word, line = keys.accept_line }) do
      if key then
        local fallback = M.fallback(key)
        vim.keymap.set("i", key, function()
          if not ghost.accept(bufnr, how) then fallback() end
        end, { buffer = bufnr, desc = ACCEPT_DESCS[how] })
      end
    end
    if keys.suggest then
      vim.keymap.set("i", keys.suggest, function() ghost.ask(client, bufnr, true) end,
        { buffer = bufnr, desc = "Tandem: a suggestion here, now" })
    end
  end
end

-- A snooze or a filetype switched off stops Neovim's own ghost text and the popup in the buffers it concerns (the
-- plugin's ghost text asks status.active itself), and clears the plugin's ghost text and a next edit there.
local function apply_switches()
  for _, client in ipairs(vim.lsp.get_clients({ name = "tandem" })) do
    for bufnr in pairs(client.attached_buffers) do
      local on = status.active(bufnr)
      if not on then require("tandem.next_edit").dismiss(bufnr) end
      if M.config.suggestions == "native" and vim.lsp.inline_completion then
        vim.lsp.inline_completion.enable(on, { bufnr = bufnr })
      elseif M.config.suggestions == "popup" then
        vim.lsp.completion.enable(on, client.id, bufnr, { autotrigger = true })
      elseif not on then
        require("tandem.ghost").clear(bufnr)
      end
    end
  end
end
table.insert(status.listeners, apply_switches)

--- The settings the user set, as the server is sent them (an empty Lua table would go out as a JSON array).
function M.user_settings()
  local s = M.config.settings or {}
  return next(s) == nil and vim.empty_dict() or s
end

local function configure()
  local cfg = M.config
  local settings = M.user_settings()
  vim.lsp.config("tandem", {
    cmd = cfg.cmd,
    filetypes = cfg.filetypes,
    root_markers = cfg.root_markers,
    init_options = settings,
    settings = { tandem = settings },
    on_attach = M.on_attach,
    handlers = {
      -- a better suggestion where one was shown (the plugin's own ghost text asks again; Neovim's own ghost text
      -- and the popup have no way to be asked again from here)
      ["tandem/betterCompletion"] = function(_, params, ctx)
        local client = vim.lsp.get_client_by_id(ctx.client_id)
        if client and M.config.suggestions == "ghost" and status.active() then
          require("tandem.ghost").better(client, params)
        end
      end,
      ["tandem/status"] = status.on_status,
    },
  })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- lists are the user's own, not merged into the defaults' (fewer filetypes must mean fewer)
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts and opts[key] then M.config[key] = vim.deepcopy(opts[key]) end
  end
  configure()
  vim.lsp.enable("tandem")
end

--- Send the user's settings again (workspace/didChangeConfiguration; the server replaces what the editor set
--- before with them, whole), and keep them for a restart.
function M.send_settings()
  configure()
  local settings = M.user_settings()
  for _, client in ipairs(vim.lsp.get_clients({ name = "tandem" })) do
    client.settings = { tandem = settings }
    client:notify("workspace/didChangeConfiguration", { settings = client.settings })
    if settings.nextEdit == false then
      for bufnr in pairs(client.attached_buffers) do require("tandem.next_edit").dismiss(bufnr) end
    end
  end
end

function M.set_enabled(on)
  M.config.settings.enabled = on
  M.send_settings()
  vim.notify("Tandem: completions " .. (on and "on" or "off"))
end

function M.restart()
  for _, client in ipairs(vim.lsp.get_clients({ name = "tandem" })) do client:stop() end
  vim.defer_fn(function() vim.lsp.enable("tandem", false); vim.lsp.enable("tandem") end, 500)
end

local function client_of(bufnr)
  return vim.lsp.get_clients({ name = "tandem", bufnr = bufnr or 0 })[1]
    or vim.lsp.get_clients({ name = "tandem" })[1]
end

--- The server's statistics (tandem/stats); nil if it is not running. With `callback`, asynchronously (the
--- editor does not wait); without, synchronously, at most 5 s.
function M.stats(bufnr, callback)
  return M.request("tandem/stats", bufnr, callback)
end

--- The server's health report (tandem/health: `text`, the report `tandem doctor` prints with the editor's
--- settings in it, and `settings`, each in effect with where it came from); like stats().
function M.health(bufnr, callback)
  return M.request("tandem/health", bufnr, callback)
end

function M.request(method, bufnr, callback)
  local client = client_of(bufnr)
  if not client then
    if callback then callback(nil) end
    return nil
  end
  if callback then
    client:request(method, {}, function(err, result) callback(not err and result or nil, err) end, bufnr or 0)
    return nil
  end
  local res, err = client:request_sync(method, {}, 5000, bufnr or 0)
  return res and res.result, res and res.err or err
end

--- For a statusline: "Tandem ready", "Tandem loading", "Tandem off", "Tandem snoozed 25m", "Tandem error", or ""
--- where no tandem server is attached to the current buffer. `require("tandem").state()` gives the state alone.
M.statusline = status.statusline
M.state = status.state

require("tandem.commands").create()

return M
