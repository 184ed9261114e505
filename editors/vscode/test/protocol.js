// The quick protocol-level check from Node (vscode-languageserver-protocol, the library VS Code's client is
// built on): start `tandem serve`, initialize as VS Code would, wait for the models, open a file, ask for an
// inline completion mid-statement and for one in an empty body, and cancel one; then rename a variable in a small
// Python function and ask for the next edit (textDocument/copilotInlineEdit), and accept it with its command.
// Prints JSON; exits 1 on failure.
const cp = require("child_process");
const fs = require("fs");
const path = require("path");
const rpc = require("vscode-languageserver-protocol/node");

const [python, file] = process.argv.slice(2);
const server = cp.spawn(python, ["-m", "lsp_server.cli.main", "serve"], { stdio: ["pipe", "pipe", "inherit"] });
const conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(server.stdout),
                                          new rpc.StreamMessageWriter(server.stdin));
conn.listen();
const out = {};
const fail = (why) => { out.ok = false; out.error = String(why); console.log(JSON.stringify(out)); server.kill(); process.exit(1); };
setTimeout(() => fail("timed out"), 360000);

(async () => {
  const init = await conn.sendRequest(rpc.InitializeRequest.type, {
    processId: process.pid, rootUri: null, capabilities: {
      textDocument: { inlineCompletion: { dynamicRegistration: false }, synchronization: {} },
      general: { positionEncodings: ["utf-16"] }, window: { workDoneProgress: false } },
    initializationOptions: { timeBudgetMs: 30000 } });
  out.inline = !!init.capabilities.inlineCompletionProvider;
  await conn.sendNotification(rpc.InitializedNotification.type, {});
  for (let i = 0; i < 600; i++) {
    const s = await conn.sendRequest("tandem/stats", {});
    if (s.ready || s.load_error) { out.ready = s.ready; break; }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!out.ready) fail("models not ready");
  const uri = "file://" + path.resolve(file);
  const text = fs.readFileSync(file, "utf8");
  const lines = text.split("\n");
  let row = lines.length - 1;
  while (!(lines[row].length && !lines[row].trim())) row--;
  const typed = lines[row] + "value, ok := s.items[";
  lines[row] = typed;
  await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, {
    textDocument: { uri, languageId: "go", version: 1, text: lines.join("\n") } });
  const ask = (character, token) => conn.sendRequest(rpc.InlineCompletionRequest.type, {
    textDocument: { uri }, position: { line: row, character }, context: { triggerKind: 2 } }, token);
  const res = await ask(typed.length);
  out.completion = (res.items || res)[0]?.insertText ?? "";
  out.command = (res.items || res)[0]?.command?.command ?? null;
  // a cancelled request answers -32800 (RequestCancelled): a second file no cache has seen keeps the model
  // busy long enough to cancel it
  const uri2 = uri.replace(/\.go$/, "-2.go");
  await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, {
    textDocument: { uri: uri2, languageId: "go", version: 1, text: `// ${Date.now()}\n` + lines.join("\n") } });
  const source = new rpc.CancellationTokenSource();
  const pending = conn.sendRequest(rpc.InlineCompletionRequest.type, {
    textDocument: { uri: uri2 }, position: { line: row + 1, character: typed.length },
    context: { triggerKind: 2 } }, source.token);
  setTimeout(() => source.cancel(), 300);
  try { await pending; out.cancelled = "answered"; } catch (e) { out.cancelled = e.code; }
  const again = await ask(typed.length);
  out.after_cancel = (again.items || again)[0]?.insertText ?? "";
  // next edit: `total` renamed on its first line (the change as the editor sends it), the uses below follow
  const cart = uri.replace(/[^/]+$/, "cart.py");
  await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, { textDocument: { uri: cart,
    languageId: "python", version: 1,
    text: "def order_total(items):\n    total = 0\n    for item in items:\n        total += item.price\n    return total\n" } });
  await conn.sendNotification(rpc.DidChangeTextDocumentNotification.type, { textDocument: { uri: cart, version: 2 },
    contentChanges: [{ range: { start: { line: 1, character: 4 }, end: { line: 1, character: 4 } }, text: "sub" }] });
  const ne = await conn.sendRequest("textDocument/copilotInlineEdit", {
    textDocument: { uri: cart, version: 2 }, position: { line: 1, character: 7 } });
  const edit = ne.edits[0];
  out.next_edit = edit ? { text: edit.text, range: edit.range, version: edit.textDocument.version,
                           command: edit.command.command } : null;
  if (edit) {
    await conn.sendRequest(rpc.ExecuteCommandRequest.type, { command: edit.command.command, arguments: edit.command.arguments });
    out.next_edit.accepted = (await conn.sendRequest("tandem/stats", {})).next_edit.accepted;
  }
  out.ok = out.inline && out.completion.length > 0 && out.cancelled === -32800 && out.after_cancel.length > 0 &&
           out.command === "tandem.accepted" && !!edit && edit.text.includes("return subtotal") &&
           out.next_edit.version === 2 && out.next_edit.accepted === 1;
  console.log(JSON.stringify(out));
  await conn.sendRequest(rpc.ShutdownRequest.type);
  await conn.sendNotification(rpc.ExitNotification.type);
  process.exit(out.ok ? 0 : 1);
})().catch(fail);
