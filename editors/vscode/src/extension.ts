// Tandem for VS Code: starts `tandem serve` for its languages, sends it the settings the user set, shows its state
// in the status bar, offers the commands people expect (pull and choose models, health, log), and
// reports accepted suggestions (inline items carry the `tandem.accepted` command the server counts), and tells
// the server where the cursor went (`tandem/didMoveCursor`) so it fills the KV cache there before the first key,
// and what it shows after a scroll (`tandem/visibleRanges`), where the user reads;
// where the server has a better suggestion than the one shown (`tandem/betterCompletion`), it asks again; and it
// shows the server's next edit once an edit rests (next-edit.ts).
import * as os from "os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification, LanguageClient, LanguageClientOptions, MessageType, ServerOptions,
  ShowMessageNotification, ShowMessageParams, State,
} from "vscode-languageclient/node";
import { NextEdits } from "./next-edit";
import { findServer } from "./server-path";
import { defaultLanguages, selectorLanguages, userSettings } from "./settings";
import { Whereabouts } from "./whereabouts";

// the server's settings: every `tandem.*` setting package.json declares (their defaults are the server's own,
// tests/editors/test_editor_settings.py), less the extension's own; a change of one of those restarts the server
let SETTINGS: string[] = [];
const EXTENSION_ONLY = ["serverPath", "logLevel"];
// the settings whose workspace values an untrusted workspace does not get (package.json's restrictedConfigurations)
let RESTRICTED: string[] = [];
let DEFAULT_LANGUAGES: string[] = [];
let attached: string[] = [];   // the languages the running client's selector holds
let selector: { language: string; scheme: string }[] = [];

let client: LanguageClient | undefined;
let status: vscode.StatusBarItem;
let output: vscode.LogOutputChannel;   // one for the window, whatever the restarts
let startError: string | undefined;
// the statistics and the health report as read-only documents of the extension's own scheme: not saved, not sent
// to the server, one tab each
const STATS_URI = vscode.Uri.parse("tandem:/statistics.json");
const HEALTH_URI = vscode.Uri.parse("tandem:/health.txt");
const shown = new Map<string, string>();
const shownChanged = new vscode.EventEmitter<vscode.Uri>();
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
// where the user is (cursor, view) told to the server, and its offers of better suggestions taken up
const whereabouts = new Whereabouts({
  client: () => client, selector: () => selector, snoozed: () => Date.now() < snoozedUntil });

// what the user set, and nothing else: the server replaces its editor layer with this object each time, so a
// setting removed here falls back to the user's config.toml, the workspace's tandem.toml or the default
// In a workspace not trusted, the workspace's values of the restricted settings are left out, and the server is
// told not to read the workspace's tandem.toml (workspaceTrusted).
function settings(): Record<string, unknown> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const cfg = vscode.workspace.getConfiguration("tandem", folder);
  const trusted = vscode.workspace.isTrusted;
  const out = userSettings((key) => cfg.inspect(key), SETTINGS, trusted ? [] : RESTRICTED);
  return trusted ? out : { ...out, workspaceTrusted: false };
}

function languages(): string[] {
  return selectorLanguages(DEFAULT_LANGUAGES,
                           vscode.workspace.getConfiguration("tandem").get<Record<string, unknown>>("languages"));
}

async function show(uri: vscode.Uri, text: string, language: string): Promise<void> {
  shown.set(uri.toString(), text);
  shownChanged.fire(uri);
  const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(uri), language);
  await vscode.window.showTextDocument(doc, { preview: true });
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

// the `tandem` command as the extension runs it, or why there is none
function server(): { command?: string; why?: string } {
  const setting = vscode.workspace.getConfiguration("tandem").get<string>("serverPath") || "tandem";
  const command = findServer(setting, process.env.PATH ?? "", os.homedir());
  if (command) return { command };
  return { why: setting === "tandem" ? "no `tandem` found (~/.local/bin, PATH)"
                                     : `tandem.serverPath ${setting} is not an executable file` };
}

async function start(): Promise<void> {
  const { command, why } = server();
  if (!command) {
    startError = why;
    output.appendLine(`Tandem: ${startError}`);
    void offerHelp(startError!);
    return;
  }
  output.appendLine(`Tandem: starting ${command} serve`);
  // tandem.logLevel reaches the server as TANDEM_LOG; unset, the environment's own (or the server's default) holds
  const level = userSettings((k) => vscode.workspace.getConfiguration("tandem").inspect(k), ["logLevel"]).logLevel;
  const env = level === undefined ? undefined : { ...process.env, TANDEM_LOG: String(level) };
  const serverOptions: ServerOptions = { command, args: ["serve"], options: env && { env } };
  attached = languages();
  selector = attached.flatMap((language) => [{ language, scheme: "file" }, { language, scheme: "untitled" }]);
  const clientOptions: LanguageClientOptions = {
    documentSelector: selector,
    initializationOptions: settings(),
    synchronize: { configurationSection: "tandem" },
    outputChannel: output,
    middleware: {
      provideInlineCompletionItems: (document, position, ctx, token, next) =>
        Date.now() < snoozedUntil ? undefined : next(document, position, ctx, token),
      // the whole section the user set, each time (the client's own would send every default with it)
      workspace: {
        didChangeConfiguration: async () => {
          await client?.sendNotification(DidChangeConfigurationNotification.type, { settings: { tandem: settings() } });
        },
      },
    },
  };
  client = new LanguageClient("tandem", "Tandem", serverOptions, clientOptions);
  try {
    await client.start();
    startError = undefined;
    // the server says when its state changes (loading, ready, error, on/off): shown at once, not at the next poll
    client.onNotification("tandem/status", onStatus);
    client.onNotification("tandem/betterCompletion", (p) => void whereabouts.better(p));
    // the server's messages as the client shows them, but one that says to pull the models gets the command
    // that runs here and the button that does it
    const running = command;
    client.onNotification(ShowMessageNotification.type, (p) => onMessage(p, running));
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
  const pick = await vscode.window.showErrorMessage(`Tandem: ${why}`, "Set Path", "Pull Models", "Show Log");
  await act(pick);
}

async function act(pick: string | undefined): Promise<void> {
  if (pick === "Set Path") {
    // a machine setting: in a remote window (SSH, a container, code-server) it lives in the remote's settings, and
    // the user's own tab does not list it
    if (vscode.env.remoteName) {
      await vscode.commands.executeCommand("workbench.action.openRemoteSettings", { query: "tandem.serverPath" });
    } else {
      await vscode.commands.executeCommand("workbench.action.openSettings", "tandem.serverPath");
    }
  } else if (pick === "Pull Models") {
    await pullModels();
  } else if (pick === "Choose Model") {
    await chooseModel();
  } else if (pick === "Show Log") {
    output.show();
  } else if (pick === "Show Health") {
    await showHealth();
  }
}

// the server's text says `tandem ...` for its commands; here they run as the command the extension found
function withCommand(text: string, command: string): string {
  return command === "tandem" ? text : text.replace(/`tandem /g, `\`${command} `);
}

function onMessage(p: ShowMessageParams, command: string): void {
  const text = `Tandem: ${withCommand(p.message, command)}`;
  if (p.type === MessageType.Error && /models pull/.test(p.message)) {
    void vscode.window.showErrorMessage(text, "Pull Models", "Choose Model", "Show Health").then(act);
  } else if (p.type === MessageType.Error) {
    void vscode.window.showErrorMessage(text, "Show Health", "Show Log").then(act);
  } else if (p.type === MessageType.Warning) {
    void vscode.window.showWarningMessage(text);
  } else {
    void vscode.window.showInformationMessage(text);
  }
}

// `tandem models pull` as a task in the terminal panel (its progress bars as they are); when it has fetched them,
// a server that could not load its models starts again
async function pullModels(): Promise<void> {
  const { command, why } = server();
  if (!command) {
    const pick = await vscode.window.showErrorMessage(`Tandem: Pull Models needs the server: ${why}`, "Set Path");
    await act(pick);
    return;
  }
  const task = new vscode.Task({ type: "tandem", action: "pull" }, vscode.TaskScope.Global, "pull models", "tandem",
                               new vscode.ProcessExecution(command, ["models", "pull"]));
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, panel: vscode.TaskPanelKind.Dedicated };
  const run = await vscode.tasks.executeTask(task);
  const done = vscode.tasks.onDidEndTaskProcess(async (e) => {
    if (e.execution !== run) return;
    done.dispose();
    if (e.exitCode === 0) {
      void vscode.window.showInformationMessage("Tandem: the default models are in place.");
      if (startError || serverState.state === "error" || lastStats?.load_error) await restart();
    } else {
      void vscode.window.showErrorMessage(`Tandem: \`${command} models pull\` failed (exit ${e.exitCode}); ` +
                                          "its terminal says why.");
    }
  });
}

// the default models, or a GGUF file for the target or the draft; written to the user's settings
async function chooseModel(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("tandem");
  const now = (key: string) => cfg.get<string>(key) || "the default";
  const items: (vscode.QuickPickItem & { key?: "target" | "draft"; value?: string })[] = [
    { label: "$(package) Default models", detail: "the target and draft that Tandem: Pull Models fetches" },
    { label: "$(file) Target model: a GGUF file…", description: `now ${now("target")}`, key: "target" },
    { label: "$(file) Draft model: a GGUF file…", description: `now ${now("draft")}`, key: "draft" },
    { label: "$(circle-slash) No draft model", detail: "the target alone, no speculative drafts from a model",
      key: "draft", value: "none" },
  ];
  const pick = await vscode.window.showQuickPick(items, { placeHolder: "Tandem: which models" });
  if (!pick) return;
  const global = vscode.ConfigurationTarget.Global;
  if (!pick.key) {
    await cfg.update("target", undefined, global);
    await cfg.update("draft", undefined, global);
    return;
  }
  let value = pick.value;
  if (value === undefined) {
    const files = await vscode.window.showOpenDialog({
      canSelectMany: false, filters: { "GGUF models": ["gguf"] }, openLabel: `Use as the ${pick.key} model` });
    if (!files?.length) return;
    value = files[0].fsPath;
  }
  await cfg.update(pick.key, value, global);
}

// the server's health report (tandem/health: what `tandem doctor` prints, with this editor's settings); with no
// server running, why not, and what would help
async function showHealth(): Promise<void> {
  if (!client || client.state !== State.Running) {
    const why = startError ?? "the server is not running (Tandem: Restart Server starts it)";
    await act(await vscode.window.showErrorMessage(`Tandem: ${why}`, "Pull Models", "Set Path", "Show Log"));
    return;
  }
  try {
    const health = await client.sendRequest<{ text: string }>("tandem/health");
    await show(HEALTH_URI, health.text, "plaintext");
  } catch (e) {
    void vscode.window.showErrorMessage(`Tandem: the server did not answer tandem/health: ${String(e)}`, "Show Log")
      .then(act);
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
    { label: "$(pulse) Show health", command: "tandem.showHealth" },
    { label: "$(graph) Show statistics", command: "tandem.showStats" },
    { label: "$(file-binary) Choose model…", command: "tandem.chooseModel" },
    { label: "$(output) Show log", command: "tandem.showLog" },
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

async function restart(): Promise<void> {
  await stop();
  await start();
  await refresh();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Tandem", { log: true });
  const manifest = context.extension.packageJSON;
  SETTINGS = (manifest.contributes.configuration as { properties: Record<string, unknown> }[])
    .flatMap((section) => Object.keys(section.properties))
    .map((k) => k.replace(/^tandem\./, "")).filter((k) => !EXTENSION_ONLY.includes(k));
  DEFAULT_LANGUAGES = defaultLanguages(manifest.activationEvents);
  RESTRICTED = (manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations ?? [])
    .map((k: string) => k.replace(/^tandem\./, ""));
  context.subscriptions.push(output, shownChanged);
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider("tandem", {
    onDidChange: shownChanged.event,
    provideTextDocumentContent: (uri) => shown.get(uri.toString()) ?? "",
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
      await show(STATS_URI, JSON.stringify(await client.sendRequest("tandem/stats", {}), null, 2), "json");
    }),
    vscode.commands.registerCommand("tandem.showHealth", () => showHealth()),
    vscode.commands.registerCommand("tandem.pullModels", () => pullModels()),
    vscode.commands.registerCommand("tandem.chooseModel", () => chooseModel()),
    vscode.commands.registerCommand("tandem.acceptNextWord",
      () => acceptPart("editor.action.inlineSuggest.acceptNextWord")),
    vscode.commands.registerCommand("tandem.acceptNextLine",
      () => acceptPart("editor.action.inlineSuggest.acceptNextLine")),
    vscode.commands.registerCommand("tandem.restart", () => restart()),
    vscode.commands.registerCommand("tandem.menu", () => menu()),
    vscode.commands.registerCommand("tandem.showLog", () => output.show()),
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
    // trusted now: the workspace's tandem.toml and its values of the restricted settings apply from the start
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // how the server runs, and which languages the client attaches to, are fixed when it starts
      const relaunch = EXTENSION_ONLY.some((k) => e.affectsConfiguration(`tandem.${k}`)) ||
        (e.affectsConfiguration("tandem.languages") && languages().join() !== attached.join());
      if (relaunch) void restart();
    }),
    { dispose: () => void stop() },
  );
  await start();
  context.subscriptions.push(
    vscode.window.onDidChangeTextEditorSelection((e) => whereabouts.cursor(e.textEditor, false)),
    vscode.window.onDidChangeTextEditorVisibleRanges((e) => whereabouts.view(e.textEditor)),
    vscode.window.onDidChangeActiveTextEditor((e) => whereabouts.cursor(e, true)),
    vscode.workspace.onDidCloseTextDocument((d) => whereabouts.forget(d.uri.toString())),
    whereabouts,
  );
  whereabouts.cursor(vscode.window.activeTextEditor, true);
  context.subscriptions.push(new NextEdits({
    client: () => client, selector: () => selector, snoozed: () => Date.now() < snoozedUntil }));
  context.subscriptions.push({ dispose: () => { if (statsTimer) clearTimeout(statsTimer); } });
  await refresh();
}

export async function deactivate(): Promise<void> {
  if (statsTimer) clearTimeout(statsTimer);
  whereabouts.dispose();
  await stop();
}
