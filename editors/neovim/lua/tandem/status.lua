-- What the plugin knows of Tandem's state without asking the server: the state each server last pushed
-- (tandem/status), a snooze, the filetypes switched off for this session; and the statusline component built
-- from them. A change redraws the statuslines and fires `User TandemStatus`, so a statusline plugin that caches
-- (lualine) can refresh on it.
local M = {}

M.servers = {}         -- client id -> { state, message, enabled } as last pushed
M.snoozed_until = 0    -- vim.uv.hrtime() in ms; no suggestion is asked for before it
M.off = {}             -- filetype -> true: switched off for this session
M.listeners = {}       -- functions called after each change (the plugin re-applies its per-buffer switches)

local timer

local function now_ms() return vim.uv.hrtime() / 1e6 end

function M.changed()
  for _, fn in ipairs(M.listeners) do pcall(fn) end
  vim.api.nvim_exec_autocmds("User", { pattern = "TandemStatus", modeline = false })
  pcall(vim.cmd.redrawstatus, { bang = true })
end

--- The handler of tandem/status {state, message, enabled}.
function M.on_status(_, params, ctx)
  if type(params) ~= "table" or type(params.state) ~= "string" then return end
  M.servers[ctx.client_id] = { state = params.state, message = params.message, enabled = params.enabled }
  M.changed()
end

function M.snoozed() return now_ms() < M.snoozed_until end

--- Minutes of snooze left, rounded up; 0 when not snoozed.
function M.snooze_left()
  return M.snoozed() and math.ceil((M.snoozed_until - now_ms()) / 60000) or 0
end

--- Ask for no suggestion for `minutes` (0 or less: end a snooze); this Neovim only.
function M.snooze(minutes)
  if timer then timer:stop(); timer:close(); timer = nil end
  if minutes > 0 then
    M.snoozed_until = now_ms() + minutes * 60000
    timer = vim.uv.new_timer()
    timer:start(math.floor(minutes * 60000), 0, vim.schedule_wrap(function() M.snooze(0) end))
  else
    M.snoozed_until = 0
  end
  M.changed()
end

--- Switch a filetype off, or on again, for this session; returns whether it is on now.
function M.toggle_language(ft)
  M.off[ft] = not M.off[ft] or nil
  M.changed()
  return not M.off[ft]
end

--- Whether the plugin asks for suggestions in this buffer now (not snoozed, its filetype not switched off).
function M.active(bufnr)
  return not M.snoozed() and not M.off[vim.bo[bufnr or 0].filetype]
end

local function client_of(bufnr)
  return vim.lsp.get_clients({ name = "tandem", bufnr = bufnr })[1]
end

--- The state in this buffer (0 or nil: the current one): "error", "off", "snoozed", "loading" or "ready"; nil
--- where no tandem server is attached to it.
function M.state(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = client_of(bufnr)
  if not client then return nil end
  local s = M.servers[client.id] or { state = "loading" }   -- started, nothing pushed yet
  if s.state == "error" then return "error" end
  if s.state == "disabled" or s.enabled == false or M.off[vim.bo[bufnr].filetype] then return "off" end
  if M.snoozed() then return "snoozed" end
  if s.state == "loading" then return "loading" end
  return "ready"   -- ready or generating
end

--- A short string for a statusline: "Tandem ready", "Tandem loading", "Tandem off", "Tandem snoozed 25m",
--- "Tandem error"; "" where no tandem server is attached to the buffer.
function M.statusline(bufnr)
  local state = M.state(bufnr)
  if not state then return "" end
  if state == "snoozed" then return string.format("Tandem snoozed %dm", M.snooze_left()) end
  return "Tandem " .. state
end

return M
