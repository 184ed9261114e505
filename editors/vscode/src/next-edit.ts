// Next edit: after an edit rests, the server may propose a change a few lines away that follows from it (a
// renamed variable's other uses, say): `textDocument/copilotInlineEdit`. Shown in place, the old lines struck
// through and the new text beside them; Tab takes it (or, where it is off the screen, first goes there), Escape
// or typing on drops it. The server counts both: the accept command it registered (`tandem.nextEditAccepted`) and
// `tandem/nextEditDismissed`.
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, State } from "vscode-languageclient/node";
import { preview } from "./edit-preview";

export interface Link {
  client(): LanguageClient | undefined;
  selector(): vscode.DocumentSelector;   // the documents the client attaches to
  snoozed(): boolean;
}

// the edit is asked for once the typing has rested this long: sooner would ask in the middle of a word, and each
// request takes the models from the completions for a second or more on a CPU
const REST_MS = 500;
const ACCEPTED = "tandem.nextEditAccepted";
const CONTEXT_KEY = "tandem.nextEditVisible";

interface Position { line: number; character: number }
interface InlineEdit {
  id: string;
  // whole lines: from a line's start to the start of the line after them, or to the end of a last line without a
  // newline (the text then ends without one, and an insertion after that line writes it again first)
  range: { start: Position; end: Position };
  text: string;                                // the new lines, in the document's line ends
  textDocument: { uri: string; version: number };
}

interface Shown {
  editor: vscode.TextEditor;
  edit: InlineEdit;
  range: vscode.Range;       // what the edit replaces, clamped to the document
  first: number;             // the first line that changes, where Tab goes
  jumped: boolean;           // the first Tab went there: the next one accepts
}

export class NextEdits implements vscode.Disposable {
  private timer: NodeJS.Timeout | undefined;
  private pending: vscode.CancellationTokenSource | undefined;
  private shown: Shown | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  // the old lines' text, not their whole width nor their indentation: the new text beside them then stands on
  // the editor's own background, where its green reads as green
  private readonly oldType = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
    textDecoration: "line-through",
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.modifiedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
  });
  // the text of these two is each decoration's own (renderOptions), so are its colours: an instance's `after`
  // is an element of its own that does not take the type's
  private readonly newType = vscode.window.createTextEditorDecorationType({});
  private readonly hintType = vscode.window.createTextEditorDecorationType({});

  constructor(private readonly link: Link) {
    this.disposables.push(
      this.oldType, this.newType, this.hintType,
      vscode.commands.registerCommand("tandem.suggestNextEdit", () => this.request(true)),
      vscode.commands.registerCommand("tandem.acceptNextEdit", () => this.accept()),
      vscode.commands.registerCommand("tandem.dismissNextEdit", () => this.dismiss()),
      vscode.workspace.onDidChangeTextDocument((e) => this.changed(e)),
      vscode.window.onDidChangeActiveTextEditor(() => { this.cancel(); this.dismiss(); }),
      vscode.window.onDidChangeTextEditorVisibleRanges((e) => { if (e.textEditor === this.shown?.editor) this.render(); }),
      vscode.window.onDidChangeTextEditorSelection((e) => { if (e.textEditor === this.shown?.editor) this.render(); }),
      vscode.workspace.onDidCloseTextDocument((d) => {
        if (d === this.shown?.editor.document) this.dismiss();
      }),
    );
  }

  private running(): LanguageClient | undefined {
    const client = this.link.client();
    return client && client.state === State.Running ? client : undefined;
  }

  // what the user set in VS Code: Tandem on, this language not turned off, next edits on (the server checks its
  // own layers as well and answers nothing where they say no)
  private wanted(doc: vscode.TextDocument): boolean {
    if (this.link.snoozed() || !vscode.languages.match(this.link.selector(), doc)) return false;
    const cfg = vscode.workspace.getConfiguration("tandem", doc.uri);
    const langs = cfg.get<Record<string, unknown>>("languages") ?? {};
    const langOn = doc.languageId in langs ? langs[doc.languageId] !== false : langs["*"] !== false;
    return cfg.get<boolean>("enabled") !== false && cfg.get<boolean>("nextEdit") !== false && langOn;
  }

  private changed(e: vscode.TextDocumentChangeEvent): void {
    if (!e.contentChanges.length) return;   // a save or a dirty-state change: no edit
    if (this.shown && e.document === this.shown.editor.document) this.dismiss();
    const editor = vscode.window.activeTextEditor;
    if (!editor || e.document !== editor.document) return;
    this.cancel();
    if (!this.wanted(e.document)) return;
    this.timer = setTimeout(() => { this.timer = undefined; void this.request(false); }, REST_MS);
  }

  private cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending?.cancel();
    this.pending?.dispose();
    this.pending = undefined;
  }

  private async request(now: boolean): Promise<void> {
    const editor = vscode.window.activeTextEditor, client = this.running();
    if (!editor || !client) return;
    const doc = editor.document;
    if (now) {
      this.cancel();
      this.dismiss();
      if (!vscode.languages.match(this.link.selector(), doc)) {
        void vscode.window.setStatusBarMessage("Tandem: not a document Tandem completes", 3000);
        return;
      }
    } else if (!this.wanted(doc)) {
      return;
    }
    const version = doc.version, pos = editor.selection.active;
    const source = new vscode.CancellationTokenSource();
    this.pending = source;
    let edits: InlineEdit[] = [], cancelled = false;
    try {
      const res = await client.sendRequest<{ edits: InlineEdit[] } | null>("textDocument/copilotInlineEdit", {
        textDocument: client.code2ProtocolConverter.asVersionedTextDocumentIdentifier(doc),
        position: { line: pos.line, character: pos.character } }, source.token);
      edits = res?.edits ?? [];
    } catch {
      // cancelled (the user typed on) or refused: nothing to show, and the server's log says why
    } finally {
      cancelled = source.token.isCancellationRequested;
      if (this.pending === source) this.pending = undefined;
      source.dispose();
    }
    const edit = edits[0];
    // an answer for an older text would put the edit in the wrong place
    if (cancelled || vscode.window.activeTextEditor !== editor || doc.version !== version) return;
    if (!edit || edit.textDocument?.version !== version) {
      if (now) void vscode.window.setStatusBarMessage("Tandem: no next edit here", 3000);
      return;
    }
    this.show(editor, edit);
  }

  private show(editor: vscode.TextEditor, edit: InlineEdit): void {
    const doc = editor.document;
    // the end is a line's start, or the document's end: the line count (which validateRange takes to the end)
    // or, with no newline at the end, the last line's end
    const r = edit.range;
    const range = doc.validateRange(new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character));
    // the lines as the region's: a last newline ends the last line, it does not start one more
    const lines = (t: string) => (t === "" ? [] : (t.endsWith("\n") ? t.slice(0, -1) : t).split("\n"));
    const crlf = (t: string) => t.replace(/\r\n/g, "\n");
    const p = preview(lines(crlf(doc.getText(range))), lines(crlf(edit.text)), range.start.line);
    if (!p.struck.length && !p.beside.length) return;   // it changes nothing
    this.dismiss();
    this.shown = { editor, edit, range, first: (p.struck[0] ?? p.beside[0].line), jumped: false };
    editor.setDecorations(this.oldType, p.struck.map((l) => {
      const line = doc.lineAt(l);
      return new vscode.Range(l, line.firstNonWhitespaceCharacterIndex, l, line.text.length);
    }));
    editor.setDecorations(this.newType, p.beside.map(({ line, text }) => ({
      range: doc.lineAt(line).range,
      renderOptions: { after: {
        contentText: text, margin: "0 0 0 2em",
        backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      } },
    })));
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, true);
    this.render();
  }

  private offScreen(s: Shown): boolean {
    return !s.jumped && !s.editor.visibleRanges.some((r) => r.start.line <= s.first && s.first <= r.end.line);
  }

  // the hint at the cursor's line, where the edit is off the screen and Tab would go there first
  private render(): void {
    const s = this.shown;
    if (!s) return;
    if (!this.offScreen(s)) {
      s.editor.setDecorations(this.hintType, []);
      return;
    }
    const line = s.editor.document.lineAt(s.editor.selection.active.line);
    s.editor.setDecorations(this.hintType, [{
      range: line.range,
      renderOptions: { after: {
        contentText: `Tab: go to the suggested edit, line ${s.first + 1}`, margin: "0 0 0 2em", fontStyle: "italic",
        color: new vscode.ThemeColor("editorCodeLens.foreground"),
      } },
    }]);
  }

  private clear(): Shown | undefined {
    const s = this.shown;
    this.shown = undefined;
    if (!s) return undefined;
    for (const t of [this.oldType, this.newType, this.hintType]) s.editor.setDecorations(t, []);
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, false);
    return s;
  }

  async accept(): Promise<void> {
    const s = this.shown;
    if (!s) return;
    if (this.offScreen(s)) {
      s.jumped = true;
      const at = new vscode.Position(s.first, s.editor.document.lineAt(s.first).firstNonWhitespaceCharacterIndex);
      s.editor.selection = new vscode.Selection(at, at);
      s.editor.revealRange(s.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      this.render();
      return;
    }
    // cleared first: the edit's own change event must not count as the user typing over it
    this.clear();
    const we = new vscode.WorkspaceEdit();
    we.replace(s.editor.document.uri, s.range, s.edit.text);
    if (!await vscode.workspace.applyEdit(we)) return;
    // vscode-languageclient registered the accept command from the server's executeCommandProvider; a client
    // that did not (an older one) sends it to the server itself
    if ((await vscode.commands.getCommands(true)).includes(ACCEPTED)) {
      await vscode.commands.executeCommand(ACCEPTED, s.edit.id);
    } else {
      await this.running()?.sendRequest(ExecuteCommandRequest.type, { command: ACCEPTED, arguments: [s.edit.id] });
    }
  }

  dismiss(): void {
    const s = this.clear();
    if (s) void this.running()?.sendNotification("tandem/nextEditDismissed", { id: s.edit.id });
  }

  dispose(): void {
    this.cancel();
    this.clear();
    for (const d of this.disposables) d.dispose();
  }
}
