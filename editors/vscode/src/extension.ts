// Tandem for VS Code: starts `tandem serve`, mirrors its settings, shows its state in the status bar, and
// reports accepted suggestions (inline items carry the `tandem.accepted` command the server counts), and tells
// the server where the cursor went (`tandem/didMoveCursor`) so it fills the KV cache there before the first key,
// and what it shows after a scroll (`tandem/visibleRanges`), where the user reads;
// where the server has a better suggestion than the one shown (`tandem/betterCompletion`), it asks again.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from "vscode-languageclient/node";

// the server's settings: every `tandem.*` setting package.json declares (their defaults are the server's own,
// tests/editors/test_editor_settings.py), less the extension's own
let SETTINGS: string[] = [];
const EXTENSION_ONLY = new Set(["serverPath"]);

let client: LanguageClient | undefined;
let status: vscode.StatusBarItem;
let output: vscode.LogOutputChannel;   // one for the window, whatever the restarts
let startError: string | undefined;
const STATS_URI = vscode.Uri.parse("tandem-stats:/statistics.json");
const statsChanged = new vscode.EventEmitter<vscode.Uri>();
let statsText = "{}";
// snoozed until this time (ms since the epoch): the client asks nothing of the server meanwhile; this window only
let snoozedUntil = 0;
const SNOOZE_MINUTES = [5, 30, 60];
// the server's state as it last pushed it (tandem/status); the statistics behind the tooltip are asked for when
// it says ready again, at most once every STATS_EVERY_MS: no polling
let serverState: { state: string; message: string } = { state: "starting", message: "" };
const STATS_EVERY_MS = 2000;
let statsTimer: NodeJS.Timeout | undefined;
let statsAt = 0;
let lastStats: Stats | undefined;

// a move with no edit in it (a click, a jump, a file switch), reported once the cursor has rested this long;
// moves that come with an edit need no report: the server sees the edit
const CURSOR_REST_MS = 150;
let cursorTimer: NodeJS.Timeout | undefined;
const versions = new Map<string, number>();

function reportCursor(editor: vscode.TextEditor | undefined, afterSwitch: boolean): void {
  if (!editor || !client || client.state !== State.Running) return;
  const doc = editor.document;
  if (doc.uri.scheme !== "file" && doc.uri.scheme !== "untitled") return;
  const uri = doc.uri.toString();
  const edited = versions.get(uri) !== undefined && versions.get(uri) !== doc.version;
  versions.set(uri, doc.version);
  if (edited && !afterSwitch) return;
  if (cursorTimer) clearTimeout(cursorTimer);
  cursorTimer = setTimeout(() => {
    const pos = editor.selection.active;
    // LSP positions are UTF-16 offsets, as VS Code's are
    void client?.sendNotification("tandem/didMoveCursor", {
      uri, position: { line: pos.line, character: pos.character } });
  }, CURSOR_REST_MS);
}

// what the editor shows after a scroll (tandem/visibleRanges): where the cursor is not in it, the user reads
// elsewhere and the server fills the pages there, so that a click in them is answered from their cached state;
// only the active editor's, once the scrolling rests
const VIEW_REST_MS = 300;
let viewTimer: NodeJS.Timeout | undefined;

function reportView(editor: vscode.TextEditor): void {
  if (!client || client.state !== State.Running || editor !== vscode.window.activeTextEditor) return;
  const doc = editor.document;
  if (doc.uri.scheme !== "file" && doc.uri.scheme !== "untitled") return;
  if (viewTimer) clearTimeout(viewTimer);
  viewTimer = setTimeout(() => {
    if (editor !== vscode.window.activeTextEditor) return;
    const at = (p: vscode.Position) => ({ line: p.line, character: p.character });
    void client?.sendNotification("tandem/visibleRanges", {
      uri: doc.uri.toString(), ranges: editor.visibleRanges.map((r) => ({ start: at(r.start), end: at(r.end) })) });
  }, VIEW_REST_MS);
}

// the server has a better suggestion where one was shown (tandem/betterCompletion: the whole page's answer, where
// a short prompt's was shown): ask again while the document, its version and the cursor are as the server saw
// them; its cache answers
function onBetter(p: { uri: string; version: number; position: { line: number; character: number } }): void {
  const editor = vscode.window.activeTextEditor;
  if (!editor || Date.now() < snoozedUntil) return;
  const doc = editor.document, pos = editor.selection.active;
  if (doc.uri.toString() !== p.uri || doc.version !== p.version || !editor.selection.isEmpty ||
      pos.line !== p.position?.line || pos.character !== p.position?.character) return;
  void vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
}

function settings(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration("tandem");
  const out: Record<string, unknown> = {};
  for (const key of SETTINGS) out[key] = cfg.get(key);
  return out;
}

interface Stats {
  ready: boolean;
  load_error: string | null;
  tok_s: number | null;
  acceptance: Record<string, Record<string, { accepted: number; drafted: number }>>;
  suggestions: { shown: number; accepted: number; partly_accepted: number };
}

function acceptance(s: Stats): string {
  let acc = 0, drafted = 0;
  for (const per of Object.values(s.acceptance)) for (const d of Object.values(per)) {
    acc += d.accepted; drafted += d.drafted;
  }
  return drafted ? `${Math.round((100 * acc) / drafted)}%` : "-";
}

function onStatus(p: { state: string; message: string }): void {
  serverState = p;
  render();
  if (p.state !== "ready" && p.state !== "disabled") return;
  if (statsTimer) return;
  statsTimer = setTimeout(() => { statsTimer = undefined; statsAt = Date.now(); void refresh(); },
                          Math.max(0, statsAt + STATS_EVERY_MS - Date.now()));
}

// the status item from what is known now, without asking the server
function render(): void {
  if (!client || client.state !== State.Running || startError) return;
  const on = vscode.workspace.getConfiguration("tandem").get<boolean>("enabled");
  const snoozed = Date.now() < snoozedUntil;
  if (serverState.state === "generating") {
    status.text = "$(sync~spin) Tandem";
  } else if (serverState.state === "loading") {
    status.text = "$(loading~spin) Tandem";
    status.tooltip = "Tandem: loading models";
  } else if (serverState.state === "error") {
    status.text = "$(error) Tandem";
    status.tooltip = `Tandem: ${serverState.message}`;
  } else if (lastStats && !lastStats.load_error && lastStats.ready) {
    const speed = lastStats.tok_s ? `${lastStats.tok_s.toFixed(1)} tok/s` : "ready";
    status.text = `${snoozed ? "$(bell-slash)" : on ? "$(sparkle)" : "$(circle-slash)"} Tandem ${speed}`;
  }
}

async function refresh(): Promise<void> {
  if (startError) {
    status.text = "$(error) Tandem";
    status.tooltip = `Tandem: the server did not start: ${startError}`;
    return;
  }
  if (!client || client.state !== State.Running) {
    status.text = "$(loading~spin) Tandem";
    status.tooltip = "Tandem: starting";
    return;
  }
  try {
    const s = await client.sendRequest<Stats>("tandem/stats", {});
    lastStats = s;
    const on = vscode.workspace.getConfiguration("tandem").get<boolean>("enabled");
    if (s.load_error) {
      status.text = "$(error) Tandem";
      status.tooltip = `Tandem: models could not be loaded: ${s.load_error}`;
    } else if (!s.ready) {
      status.text = "$(loading~spin) Tandem";
      status.tooltip = "Tandem: loading models";
    } else {
      const speed = s.tok_s ? `${s.tok_s.toFixed(1)} tok/s` : "ready";
      const snoozed = Date.now() < snoozedUntil;
      status.text = `${snoozed ? "$(bell-slash)" : on ? "$(sparkle)" : "$(circle-slash)"} Tandem ${speed}`;
      status.tooltip = `Tandem: ${on ? "on" : "off"}${snoozed ? ", snoozed" : ""}; ${s.suggestions.accepted} of ` +
        `${s.suggestions.shown} suggestions accepted (${s.suggestions.partly_accepted} in part); draft tokens ` +
        `accepted by the target: ${acceptance(s)} (click: menu)`;
    }
  } catch {
    status.text = "$(warning) Tandem";
  }
}

function executable(file: string): boolean {
  try { fs.accessSync(file, fs.constants.X_OK); return fs.statSync(file).isFile(); } catch { return false; }
}

// The server: the setting (a path, or a command looked up on PATH), else a `tandem` in the workspace's
// virtual environment, ~/.local/bin (pipx, uv tool) or on PATH. A VS Code started from a desktop often has a
// PATH without the user's shell additions, so the usual places are looked at too.
export function findServer(setting: string, folders: string[], envPath: string, home: string): string | undefined {
  const bin = process.platform === "win32" ? "tandem.exe" : "tandem";
  const onPath = (name: string) => envPath.split(path.delimiter).filter(Boolean)
    .map((d) => path.join(d, name)).find(executable);
  if (setting && setting !== "tandem") {
    if (setting.includes("/") || setting.includes("\\")) return executable(setting) ? setting : undefined;
    return onPath(setting);
  }
  const places = [...folders.map((f) => path.join(f, ".venv", "bin", bin)), path.join(home, ".local", "bin", bin)];
  return places.find(executable) ?? onPath(bin);
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  const setting = vscode.workspace.getConfiguration("tandem").get<string>("serverPath") || "tandem";
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const command = findServer(setting, folders, process.env.PATH ?? "", os.homedir());
  if (!command) {
    startError = setting === "tandem"
      ? "no `tandem` found (workspace .venv/bin, ~/.local/bin, PATH)"
      : `tandem.serverPath ${setting} is not an executable file`;
    output.appendLine(`Tandem: ${startError}`);
    void offerHelp(startError);
    return;
  }
  output.appendLine(`Tandem: starting ${command} serve`);
  const serverOptions: ServerOptions = { command, args: ["serve"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    initializationOptions: settings(),
    synchronize: { configurationSection: "tandem" },
    outputChannel: output,
    middleware: {
      provideInlineCompletionItems: (document, position, ctx, token, next) =>
        Date.now() < snoozedUntil ? undefined : next(document, position, ctx, token),
    },
  };
  client = new LanguageClient("tandem", "Tandem", serverOptions, clientOptions);
  try {
    await client.start();
    startError = undefined;
    // the server says when its state changes (loading, ready, error, on/off): shown at once, not at the next poll
    client.onNotification("tandem/status", onStatus);
    client.onNotification("tandem/betterCompletion", onBetter);
  } catch (e) {
    startError = `${command} serve: ${e instanceof Error ? e.message : String(e)}`;
    output.appendLine(`Tandem: ${startError}`);
    void offerHelp(startError);
  }
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  // a client that never started cannot be stopped (vscode-languageclient throws): nothing to stop then
  if (c && c.state !== State.Stopped) {
    try { await c.stop(); } catch (e) { output.appendLine(`Tandem: stopping the server: ${String(e)}`); }
  }
}

async function offerHelp(why: string): Promise<void> {
  const pick = await vscode.window.showErrorMessage(`Tandem: ${why}`, "Set Path", "Pull Models", "Open Log");
  if (pick === "Set Path") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "tandem.serverPath");
  } else if (pick === "Pull Models") {
    const t = vscode.window.createTerminal("Tandem");
    t.show();
    t.sendText("tandem models pull");
  } else if (pick === "Open Log") {
    output.show();
  }
}

// what a click on the status item offers (as Copilot's and llama.vscode's do)
async function menu(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("tandem");
  const on = cfg.get<boolean>("enabled");
  const lang = vscode.window.activeTextEditor?.document.languageId;
  const langOn = lang ? (cfg.get<Record<string, boolean>>("languages") ?? {})[lang] !== false : true;
  const snoozed = Date.now() < snoozedUntil;
  const items: (vscode.QuickPickItem & { command: string })[] = [
    { label: on ? "$(circle-slash) Turn completions off" : "$(sparkle) Turn completions on", command: "tandem.toggle" },
    { label: snoozed ? "$(bell) Wake up" : "$(bell-slash) Snooze…", description: "this window",
      command: "tandem.snooze" },
    ...(lang ? [{ label: langOn ? `$(circle-slash) Off for ${lang}` : `$(check) On for ${lang}`,
      command: "tandem.toggleLanguage" }] : []),
    { label: "$(graph) Show statistics", command: "tandem.showStats" },
    { label: "$(output) Open log", command: "tandem.openLog" },
    { label: "$(debug-restart) Restart server", command: "tandem.restart" },
  ];
  const pick = await vscode.window.showQuickPick(items, { placeHolder: "Tandem" });
  if (pick) await vscode.commands.executeCommand(pick.command);
}

// VS Code's accept next word / next line, and the characters it inserted told to the server
// (tandem/didPartiallyAccept): the language client's inline provider has no hook for a partial accept
async function acceptPart(builtin: string): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  let chars = 0;
  const watch = vscode.workspace.onDidChangeTextDocument((e) => {
    if (editor && e.document === editor.document) for (const c of e.contentChanges) chars += c.text.length;
  });
  try {
    await vscode.commands.executeCommand(builtin);
    await new Promise((r) => setTimeout(r, 50));   // the edit's event comes back from the editor after it
  } finally {
    watch.dispose();
  }
  if (editor && chars > 0 && client && client.state === State.Running) {
    void client.sendNotification("tandem/didPartiallyAccept", { uri: editor.document.uri.toString(), chars });
  }
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  await stop();
  await start(context);
  await refresh();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Tandem", { log: true });
  SETTINGS = Object.keys(context.extension.packageJSON.contributes.configuration.properties)
    .map((k) => k.replace(/^tandem\./, "")).filter((k) => !EXTENSION_ONLY.has(k));
  context.subscriptions.push(output, statsChanged);
  // the statistics as a read-only document of our own scheme: not saved, not sent to the server, one tab
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider("tandem-stats", {
    onDidChange: statsChanged.event,
    provideTextDocumentContent: () => statsText,
  }));
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.command = "tandem.menu";
  status.show();
  context.subscriptions.push(status);
  context.subscriptions.push(
    vscode.commands.registerCommand("tandem.toggle", async () => {
      const cfg = vscode.workspace.getConfiguration("tandem");
      await cfg.update("enabled", !cfg.get<boolean>("enabled"), vscode.ConfigurationTarget.Global);
      await refresh();
    }),
    vscode.commands.registerCommand("tandem.showStats", async () => {
      if (!client || client.state !== State.Running) {
        output.show();
        return;
      }
      statsText = JSON.stringify(await client.sendRequest("tandem/stats", {}), null, 2);
      statsChanged.fire(STATS_URI);
      const doc = await vscode.languages.setTextDocumentLanguage(
        await vscode.workspace.openTextDocument(STATS_URI), "json");
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand("tandem.acceptNextWord",
      () => acceptPart("editor.action.inlineSuggest.acceptNextWord")),
    vscode.commands.registerCommand("tandem.acceptNextLine",
      () => acceptPart("editor.action.inlineSuggest.acceptNextLine")),
    vscode.commands.registerCommand("tandem.restart", () => restart(context)),
    vscode.commands.registerCommand("tandem.menu", () => menu()),
    vscode.commands.registerCommand("tandem.openLog", () => output.show()),
    vscode.commands.registerCommand("tandem.snooze", async () => {
      if (Date.now() < snoozedUntil) {
        snoozedUntil = 0;   // wake up
      } else {
        const pick = await vscode.window.showQuickPick(SNOOZE_MINUTES.map((m) => `${m} minutes`),
                                                       { placeHolder: "Snooze Tandem in this window for" });
        if (!pick) return;
        snoozedUntil = Date.now() + parseInt(pick, 10) * 60_000;
      }
      await refresh();
    }),
    vscode.commands.registerCommand("tandem.toggleLanguage", async () => {
      const lang = vscode.window.activeTextEditor?.document.languageId;
      if (!lang) return;
      const cfg = vscode.workspace.getConfiguration("tandem");
      const languages = { ...(cfg.get<Record<string, boolean>>("languages") ?? {}) };
      languages[lang] = languages[lang] === false;
      await cfg.update("languages", languages, vscode.ConfigurationTarget.Global);
      await refresh();
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("tandem.serverPath")) void restart(context);
    }),
    { dispose: () => void stop() },
  );
  await start(context);
  context.subscriptions.push(
    vscode.window.onDidChangeTextEditorSelection((e) => reportCursor(e.textEditor, false)),
    vscode.window.onDidChangeTextEditorVisibleRanges((e) => reportView(e.textEditor)),
    vscode.window.onDidChangeActiveTextEditor((e) => reportCursor(e, true)),
    vscode.workspace.onDidCloseTextDocument((d) => versions.delete(d.uri.toString())),
  );
  reportCursor(vscode.window.activeTextEditor, true);
  context.subscriptions.push({ dispose: () => {
    if (statsTimer) clearTimeout(statsTimer);
    if (viewTimer) clearTimeout(viewTimer);
  } });
  await refresh();
}

export async function deactivate(): Promise<void> {
  if (statsTimer) clearTimeout(statsTimer);
  if (cursorTimer) clearTimeout(cursorTimer);
  await stop();
}
