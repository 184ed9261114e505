-- The filetypes Tandem starts for by default: the Neovim names of lsp_server/protocol/languages.py's
-- DEFAULT_LANGUAGES, the one list every client follows (tests/editors/test_neovim_settings.py holds them equal).
return {
  "python", "typescript", "typescriptreact", "javascript", "javascriptreact", "go", "rust", "java", "c", "cpp",
  "cs", "lua", "ruby", "php", "kotlin", "swift", "scala", "sh",
}
