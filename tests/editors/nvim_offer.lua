-- Driven by tests/editors/test_neovim.py: `nvim --headless --clean -u tests/editors/nvim_offer.lua FILE LINE` (nvim 0.11), the
-- plugin's own ghost text and the real server with its default settings. A far jump in a real-size file: the
-- line emptied to its indentation, insert mode at its end; waits for the ghost text (a fast prompt's answer),
-- then for the server to look at the place again once its fill has the page (its `offers` counts), and where
-- it offered the page's answer or completed an early one (tandem/betterCompletion), for the ghost text to change
-- to it; notes every ghost text shown after the first. Writes JSON.
local repo = os.getenv("TANDEM_REPO")
package.path = repo .. "/tests/editors/?.lua;" .. package.path
local session = require("nvim_session")
local result, note, finish, wait_until = session.result, session.note, session.finish, session.wait_until

vim.opt.rtp:prepend(repo .. "/editors/neovim")
local tandem = require("tandem")
tandem.setup({ cmd = { os.getenv("TANDEM_PYTHON"), "-m", "lsp_server.cli.main", "serve" } })
local ghost = require("tandem.ghost")

local function offers()
  local s = tandem.stats(0)
  return s and s.offers or {}
end

local function last_source()
  local client = vim.lsp.get_clients({ name = "tandem", bufnr = 0 })[1]
  local res = client and client:request_sync("tandem/stats", { records = true }, 5000, 0)
  local recs = res and res.result and res.result.records or {}
  return recs[#recs] and recs[#recs].source or ""
end

session.run(function()
  if not session.attached() then return finish(false) end
  if not session.models_ready() then return finish(false) end
  local row = tonumber(os.getenv("TANDEM_LINE"))
  local line = vim.api.nvim_buf_get_lines(0, row - 1, row, false)[1]
  local indent = line:match("^%s*")
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.api.nvim_buf_set_lines(0, row - 1, row, false, { indent })
  local before = offers()
  vim.api.nvim_input("A")
  if not wait_until(function() return vim.fn.mode() == "i" and (ghost.text(0) or "") ~= "" end, 90) then
    note("no ghost text"); return finish(false)
  end
  note("ghost text")
  result.first = ghost.text(0)
  result.first_source = last_source()
  local looked = function(o)
    return (o.offered or 0) + (o.same or 0) + (o.silent or 0) > (before.offered or 0) + (before.same or 0)
      + (before.silent or 0)
  end
  -- every ghost text shown from here on, in order (a change to the server's offer, and any after it)
  result.seen = { result.first }
  local function watch()
    local t = ghost.text(0) or ""
    if t ~= "" and t ~= result.seen[#result.seen] then table.insert(result.seen, t) end
  end
  local o
  if not wait_until(function() watch(); o = offers(); return looked(o) end, 240) then
    note("not looked at again"); result.offers = offers(); return finish(false)
  end
  note("looked at again")
  result.offered = (o.offered or 0) - (before.offered or 0)
  -- an early answer's line completed once its generation ended (told the same way, before the page's offer)
  result.completed = (o.completed or 0) - (before.completed or 0)
  if result.offered > 0 or result.completed > 0 then
    -- (asking again clears the ghost text until the answer comes)
    wait_until(function() watch(); return #result.seen > 1 end, 15)
    wait_until(function() watch(); return false end, 2)   -- a second notification's answer, where both came
    result.second_source = last_source()
  else
    wait_until(function() watch(); return false end, 2)   -- nothing is to change: give it the time it would take
  end
  watch()
  result.second = ghost.text(0) or ""
  result.mode = vim.fn.mode()
  vim.api.nvim_input("<Esc>")
  finish(true)
end)
