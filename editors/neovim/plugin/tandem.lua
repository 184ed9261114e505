-- Loaded at start-up from the runtime path (a plugin manager's, or lazy.nvim's from the repository root, whose
-- plugin/ links here): the commands and the highlights of the ghost text and of a next edit exist before setup(),
-- which starts the server.
if vim.g.loaded_tandem then return end
vim.g.loaded_tandem = true
require("tandem.commands").create()
require("tandem.ghost")
require("tandem.next_edit")
