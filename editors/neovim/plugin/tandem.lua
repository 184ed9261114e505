-- Loaded at start-up from the runtime path (a plugin manager's, or lazy.nvim's from the repository root, whose
-- plugin/ links here): the commands and the ghost text's highlight exist before setup(), which starts the server.
if vim.g.loaded_tandem then return end
vim.g.loaded_tandem = true
require("tandem.commands").create()
require("tandem.ghost")
