-- Tandem for Neovim: starts `tandem serve` for the configured filetypes and turns on completion from it:
-- ghost text (vim.lsp.inline_completion) on 0.12+, the completion popup (vim.lsp.completion) on 0.11; and tells
-- the server where the cursor went (tandem/didMoveCursor) so it fills its KV cache there before the first key.
local M = {}

M.defaults = {
  cmd = { "tandem", "serve" },
  filetypes = { "python", "typescript", "typescriptreact", "javascript", "javascriptreact", "go", "rust",
                "java", "c", "cpp", "lua" },
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  settings = {},          -- initializationOptions: the server's settings (README, "Settings")
  debounce_ms = 150,      -- 0.11: ask for a completion this long after the last keystroke
  cursor_rest_ms = 150,   -- report a cursor move (no edit in it) once the cursor has rested this long; 0: never
  keymaps = { accept = "<Tab>" },  -- 0.12 ghost text; on 0.11 the popup accepts with <C-y>
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

function M.on_attach(client, bufnr)
  report_moves(client, bufnr)
  if vim.lsp.inline_completion then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
    if M.config.keymaps.accept then
      vim.keymap.set("i", M.config.keymaps.accept, function()
        if not vim.lsp.inline_completion.get() then
          return M.config.keymaps.accept
        end
      end, { buffer = bufnr, expr = true, desc = "Tandem: accept the suggestion" })
    end
  else
    -- 0.11: the popup, asked for after each pause in typing (the server's trigger characters alone
    -- would ask too rarely for code completion)
    vim.lsp.completion.enable(true, client.id, bufnr, { autotrigger = true })
    ask_later(bufnr)
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
  })
  vim.lsp.enable("tandem")
end

--- The server's statistics (tandem/stats), synchronously; nil if it is not running.
function M.stats(bufnr)
  local client = vim.lsp.get_clients({ name = "tandem", bufnr = bufnr or 0 })[1]
  if not client then return nil end
  local res = client:request_sync("tandem/stats", {}, 5000, bufnr or 0)
  return res and res.result
end

return M
