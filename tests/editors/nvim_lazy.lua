-- Driven by tests/editors/test_neovim_settings.py: what lazy.nvim does with a user's spec
-- `{ dir = <checkout>, opts = { cmd = ..., filetypes = ..., settings = ... } }` (or `"tandem-lsp/tandem"`, cloned),
-- step by step as its lua/lazy/core/loader.lua does (_load: add_to_rtp, packadd, config with get_main). lazy.nvim
-- itself is not here: it comes from GitHub, and no package registry reachable from the tests ships it. Writes
-- what it found as JSON.
local root = os.getenv("TANDEM_REPO")
local out = {}
vim.go.loadplugins = false   -- lazy.nvim sources the plugins' plugin/ files itself

-- add_to_rtp: the plugin's folder on the runtime path (and its after/, where there is one)
vim.opt.rtp:append(root)
if vim.uv.fs_stat(root .. "/after") then vim.opt.rtp:append(root .. "/after") end

-- packadd: every .lua and .vim file under plugin/, sorted (lazy's Util.walk follows a linked folder)
local files = {}
local function walk(dir)
  local handle = vim.uv.fs_scandir(dir)
  while handle do
    local name, t = vim.uv.fs_scandir_next(handle)
    if not name then break end
    local path = dir .. "/" .. name
    t = t or vim.uv.fs_stat(path).type
    if t == "directory" then walk(path)
    elseif (t == "file" or t == "link") and (name:sub(-4) == ".lua" or name:sub(-4) == ".vim") then
      files[#files + 1] = path
    end
  end
end
walk(root .. "/plugin")
table.sort(files)
out.plugin_files = vim.tbl_map(function(p) return vim.fn.fnamemodify(p, ":t") end, files)
for _, path in ipairs(files) do vim.cmd.source(path) end
out.commands_before_setup = {}
for _, c in ipairs({ "Tandem", "TandemSnooze", "TandemResume", "TandemToggleLanguage", "TandemPullModels" }) do
  out.commands_before_setup[c] = vim.fn.exists(":" .. c) == 2
end
out.highlight = vim.api.nvim_get_hl(0, { name = "TandemSuggestion" })

-- get_main: the top-level modules under lua/ (lazy's Cache.find "*": folders, links and .lua files); with the
-- plugin's name not among them, one module is main
local modules = {}
local handle = vim.uv.fs_scandir(root .. "/lua")
while handle do
  local name, t = vim.uv.fs_scandir_next(handle)
  if not name then break end
  if t == "directory" or t == "link" then modules[#modules + 1] = name
  elseif name:sub(-4) == ".lua" then modules[#modules + 1] = name:sub(1, -5) end
end
table.sort(modules)
out.modules = modules

-- config: require(main).setup(opts)
local opts = { cmd = { "my-tandem", "serve" }, filetypes = { "python", "go" },
               settings = { maxTokensSingleLine = 12 } }
if #modules == 1 then require(modules[1]).setup(opts) end

local tandem = require("tandem")
out.default_filetypes = tandem.defaults.filetypes
local cfg = vim.lsp.config.tandem
out.cmd, out.filetypes, out.init_options, out.sent_settings = cfg.cmd, cfg.filetypes, cfg.init_options, cfg.settings
out.enabled = vim.lsp.is_enabled and vim.lsp.is_enabled("tandem") or vim.lsp._enabled_configs.tandem ~= nil
tandem.config.settings = {}
out.empty_settings_json = vim.json.encode(tandem.user_settings())

-- the highlight after a colorscheme (which clears the groups it does not define), and under a user's own
vim.cmd.colorscheme("default")
out.highlight_after_colorscheme = vim.api.nvim_get_hl(0, { name = "TandemSuggestion" })
vim.api.nvim_set_hl(0, "TandemSuggestion", { link = "String" })
require("tandem.ghost").define_highlight()
out.user_highlight = vim.api.nvim_get_hl(0, { name = "TandemSuggestion" }).link

vim.fn.writefile({ vim.json.encode(out) }, os.getenv("TANDEM_RESULT"))
vim.cmd("qa!")
