// Tandem for VS Code: starts `tandem serve`, mirrors its settings, shows its state in the status bar, and
// reports accepted suggestions (inline items carry the `tandem.accepted` command the server counts), and tells
// the server where the cursor went (`tandem/didMoveCursor`) so it fills the KV cache there before the first key.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from "vscode-languageclient/node";

const SETTINGS = ["enabled", "target", "draft", "contextSize", "threads", "gpuLayers", "gpuLayersDraft",
  "speculation", "draftMin", "draftMax", "maxTokens", "maxTokensSingleLine", "timeBudgetMs", "languages",
  "backend", "backendKind", "backendModel", "backendApiKeyEnv"];

let client: LanguageClient | undefined;
let status: vscode.StatusBarItem;
let poll: NodeJS.Timeout | undefined;

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
  suggestions: { shown: number; accepted: number };
}

function acceptance(s: Stats): string {
  let acc = 0, drafted = 0;
  for (const per of Object.values(s.acceptance)) for (const d of Object.values(per)) {
    acc += d.accepted; drafted += d.drafted;
  }
  return drafted ? `${Math.round((100 * acc) / drafted)}%` : "-";
}

async function refresh(): Promise<void> {
  if (!client || client.state !== State.Running) {
    status.text = "$(loading~spin) Tandem";
    status.tooltip = "Tandem: starting";
    return;
  }
  try {
    const s = await client.sendRequest<Stats>("tandem/stats", {});
    const on = vscode.workspace.getConfiguration("tandem").get<boolean>("enabled");
    if (s.load_error) {
      status.text = "$(error) Tandem";
      status.tooltip = `Tandem: models could not be loaded: ${s.load_error}`;
    } else if (!s.ready) {
      status.text = "$(loading~spin) Tandem";
      status.tooltip = "Tandem: loading models";
    } else {
      const speed = s.tok_s ? `${s.tok_s.toFixed(1)} tok/s` : "ready";
      status.text = `${on ? "$(sparkle)" : "$(circle-slash)"} Tandem ${speed} · ${acceptance(s)}`;
      status.tooltip = `Tandem: ${on ? "on" : "off"}; draft acceptance ${acceptance(s)}; ` +
        `${s.suggestions.accepted} of ${s.suggestions.shown} suggestions accepted`;
    }
  } catch {
    status.text = "$(warning) Tandem";
  }
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  const command = vscode.workspace.getConfiguration("tandem").get<string>("serverPath") || "tandem";
  const serverOptions: ServerOptions = { command, args: ["serve"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    initializationOptions: settings(),
    synchronize: { configurationSection: "tandem" },
    outputChannelName: "Tandem",
  };
  client = new LanguageClient("tandem", "Tandem", serverOptions, clientOptions);
  await client.start();
  context.subscriptions.push({ dispose: () => void client?.stop() });
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.command = "tandem.showStats";
  status.show();
  context.subscriptions.push(status);
  context.subscriptions.push(
    vscode.commands.registerCommand("tandem.toggle", async () => {
      const cfg = vscode.workspace.getConfiguration("tandem");
      await cfg.update("enabled", !cfg.get<boolean>("enabled"), vscode.ConfigurationTarget.Global);
      await refresh();
    }),
    vscode.commands.registerCommand("tandem.showStats", async () => {
      if (!client) return;
      const s = await client.sendRequest("tandem/stats", {});
      const doc = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(s, null, 2) });
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand("tandem.restart", async () => {
      await client?.stop();
      await start(context);
      await refresh();
    }),
  );
  await start(context);
  context.subscriptions.push(
    vscode.window.onDidChangeTextEditorSelection((e) => reportCursor(e.textEditor, false)),
    vscode.window.onDidChangeActiveTextEditor((e) => reportCursor(e, true)),
    vscode.workspace.onDidCloseTextDocument((d) => versions.delete(d.uri.toString())),
  );
  reportCursor(vscode.window.activeTextEditor, true);
  poll = setInterval(() => void refresh(), 2000);
  context.subscriptions.push({ dispose: () => poll && clearInterval(poll) });
  await refresh();
}

export async function deactivate(): Promise<void> {
  if (poll) clearInterval(poll);
  if (cursorTimer) clearTimeout(cursorTimer);
  await client?.stop();
}
