-- The plugin's accept key on Neovim 0.12's own ghost-text path (suggestions = "native"), in a headless 0.11 with
-- vim.lsp.inline_completion stood in for (the suggestion there or not): with a suggestion the key accepts it; without, it does what the
-- mapping it replaced did (a completion plugin's <Tab>), or types the key where there was none. And :Tandem.
vim.opt.rtp:prepend(os.getenv("TANDEM_REPO") .. "/editors/neovim")
local out = {}
local suggestion, accepted = false, 0
vim.lsp.inline_completion = {
  enable = function() end,
  get = function() if suggestion then accepted = accepted + 1 end; return suggestion end,
}
local tandem = require("tandem")
tandem.config.cursor_rest_ms = 0
tandem.config.suggestions = "native"

local function type_keys(keys) vim.api.nvim_feedkeys(vim.keycode(keys), "tx", false) end

-- a buffer with no earlier <Tab> mapping: the key itself
local plain = vim.api.nvim_create_buf(true, false)
vim.api.nvim_set_current_buf(plain)
tandem.on_attach(nil, plain)
type_keys("ia<Tab>b<Esc>")
out.plain = vim.api.nvim_buf_get_lines(plain, 0, -1, false)[1]
suggestion = true
type_keys("A<Tab><Esc>")
out.plain_with_suggestion = vim.api.nvim_buf_get_lines(plain, 0, -1, false)[1]
out.accepted = accepted

-- a completion plugin's global <Tab> (a Lua callback that edits the buffer), mapped before Tandem attached
suggestion = false
vim.keymap.set("i", "<Tab>", function() vim.api.nvim_put({ "[plugin]" }, "c", false, true) end)
local other = vim.api.nvim_create_buf(true, false)
vim.api.nvim_set_current_buf(other)
tandem.on_attach(nil, other)
type_keys("ix<Tab>y<Esc>")
out.plugin = vim.api.nvim_buf_get_lines(other, 0, -1, false)[1]
-- an expr mapping that returns keys (as snippet plugins do)
vim.keymap.set("i", "<Tab>", function() return "<C-r>='(expr)'<CR>" end, { expr = true })
local third = vim.api.nvim_create_buf(true, false)
vim.api.nvim_set_current_buf(third)
tandem.on_attach(nil, third)
type_keys("iu<Tab>v<Esc>")
out.expr = vim.api.nvim_buf_get_lines(third, 0, -1, false)[1]

out.commands = vim.fn.exists(":Tandem") == 2
local ok, err = pcall(vim.cmd, "Tandem nosuch")
out.unknown_command = ok and "" or tostring(err)
-- :checkhealth tandem, with a server command that is not there and no server running
tandem.config.cmd = { "no-such-tandem-command", "serve" }
vim.cmd("checkhealth tandem")
out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
vim.fn.writefile({ vim.json.encode(out) }, os.getenv("TANDEM_RESULT"))
vim.cmd("qa!")
