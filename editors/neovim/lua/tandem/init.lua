-- Tandem for Neovim: starts `tandem serve` for the configured filetypes and turns on completion from it: ghost
-- text of the plugin's own (ghost.lua: accept all, the next word or the next line), or with `suggestions` Neovim's
-- own ghost text on 0.12+ ("native", vim.lsp.inline_completion) or the completion popup ("popup",
-- vim.lsp.completion); and tells the server where the cursor went (tandem/didMoveCursor) so it fills its KV cache
-- there before the first key.
local M = {}

M.defaults = {
  cmd = { "tandem", "serve" },
  filetypes = { "python", "typescript", "typescriptreact", "javascript", "javascriptreact", "go", "rust",
                "java", "c", "cpp", "lua" },
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  settings = {},          -- initializationOptions: the server's settings (docs/settings.md)
  debounce_ms = 150,      -- 0.11: ask for a completion this long after the last keystroke
  cursor_rest_ms = 150,   -- report a cursor move (no edit in it) once the cursor has rested this long; 0: never
  -- "ghost" (the plugin's ghost text), "native" (0.12+: vim.lsp.inline_completion; accept only) or "popup" (the
  -- completion menu, <C-y>)
  suggestions = "ghost",
  -- accept: the whole suggestion ("ghost", "native"); accept_word / accept_line: its next word or line, and
  -- suggest: ask here and now, where an automatic request would skip ("ghost"); false: not mapped
  keymaps = { accept = "<Tab>", accept_word = "<M-Right>", accept_line = "<M-C-Right>", suggest = "<M-\\>" },
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
        if vim.api.nvim_get_current_buf() == bufnr and vim.fn.mode() == "i" then
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
          or vim.api.nvim_get_current_buf() ~= bufnr then return end
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
  local how = M.config.suggestions
  if how == "native" and vim.lsp.inline_completion then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
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
    vim.lsp.completion.enable(true, client.id, bufnr, { autotrigger = true })
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

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  local cfg = M.config
  -- an empty Lua table would go out as a JSON array
  local settings = next(cfg.settings) == nil and vim.empty_dict() or cfg.settings
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
        if client and M.config.suggestions == "ghost" then require("tandem.ghost").better(client, params) end
      end,
    },
  })
  vim.lsp.enable("tandem")
end

local function client_of(bufnr)
  return vim.lsp.get_clients({ name = "tandem", bufnr = bufnr or 0 })[1]
    or vim.lsp.get_clients({ name = "tandem" })[1]
end

--- The server's statistics (tandem/stats); nil if it is not running. With `callback`, asynchronously (the
--- editor does not wait); without, synchronously, at most 5 s.
function M.stats(bufnr, callback)
  local client = client_of(bufnr)
  if not client then
    if callback then callback(nil) end
    return nil
  end
  if callback then
    client:request("tandem/stats", {}, function(err, result) callback(not err and result or nil) end, bufnr or 0)
    return nil
  end
  local res = client:request_sync("tandem/stats", {}, 5000, bufnr or 0)
  return res and res.result
end

local function show_stats()
  M.stats(0, vim.schedule_wrap(function(s)
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

local function set_enabled(on)
  M.config.settings.enabled = on
  for _, client in ipairs(vim.lsp.get_clients({ name = "tandem" })) do
    client:notify("workspace/didChangeConfiguration", { settings = { tandem = { enabled = on } } })
  end
  vim.notify("Tandem: completions " .. (on and "on" or "off"))
end

M.commands = {
  status = function()
    M.stats(0, vim.schedule_wrap(function(s)
      if not s then return vim.notify("Tandem: not running") end
      local state = s.load_error and ("models could not be loaded: " .. s.load_error)
        or (s.ready and "ready" or "loading models")
      vim.notify(string.format("Tandem: %s; %s tok/s; %d of %d suggestions accepted", state,
        s.tok_s and string.format("%.1f", s.tok_s) or "-", s.suggestions.accepted, s.suggestions.shown))
    end))
  end,
  stats = show_stats,
  enable = function() set_enabled(true) end,
  disable = function() set_enabled(false) end,
  toggle = function() set_enabled(M.config.settings.enabled == false) end,
  restart = function()
    for _, client in ipairs(vim.lsp.get_clients({ name = "tandem" })) do client:stop() end
    vim.defer_fn(function() vim.lsp.enable("tandem", false); vim.lsp.enable("tandem") end, 500)
  end,
}

vim.api.nvim_create_user_command("Tandem", function(opts)
  local run = M.commands[opts.fargs[1] or "status"]
  if not run then
    return vim.notify("Tandem: no such command " .. opts.fargs[1] .. " (status, stats, enable, disable, toggle, restart)",
      vim.log.levels.ERROR)
  end
  run()
end, { nargs = "?", complete = function() return vim.tbl_keys(M.commands) end,
       desc = "Tandem: status | stats | enable | disable | toggle | restart" })

return M
