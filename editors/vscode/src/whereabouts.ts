// Where the user is, told to the server: a cursor move with no edit in it (`tandem/didMoveCursor`), so the server
// fills its KV cache there before the first key, and what a scroll shows (`tandem/visibleRanges`), where the user
// reads; and the server's offers of a better suggestion than the one shown (`tandem/betterCompletion`) taken up.
import * as vscode from "vscode";
import { LanguageClient, State } from "vscode-languageclient/node";

export interface Link {
  client(): LanguageClient | undefined;
  selector(): vscode.DocumentSelector;   // the documents the client attaches to
  snoozed(): boolean;
}

// a move with no edit in it (a click, a jump, a file switch) is reported once the cursor has rested this long;
// moves that come with an edit need no report: the server sees the edit
const CURSOR_REST_MS = 150;
// the view is reported once the scrolling rests, only the active editor's
const VIEW_REST_MS = 300;

export class Whereabouts implements vscode.Disposable {
  private cursorTimer: NodeJS.Timeout | undefined;
  private viewTimer: NodeJS.Timeout | undefined;
  private readonly versions = new Map<string, number>();

  constructor(private readonly link: Link) {}

  private running(): LanguageClient | undefined {
    const client = this.link.client();
    return client && client.state === State.Running ? client : undefined;
  }

  cursor(editor: vscode.TextEditor | undefined, afterSwitch: boolean): void {
    if (!editor || !this.running()) return;
    const doc = editor.document;
    if (!vscode.languages.match(this.link.selector(), doc)) return;   // a document the server was never sent
    const uri = doc.uri.toString();
    const edited = this.versions.get(uri) !== undefined && this.versions.get(uri) !== doc.version;
    this.versions.set(uri, doc.version);
    if (edited && !afterSwitch) return;
    if (this.cursorTimer) clearTimeout(this.cursorTimer);
    this.cursorTimer = setTimeout(() => {
      const pos = editor.selection.active;
      // LSP positions are UTF-16 offsets, as VS Code's are
      void this.running()?.sendNotification("tandem/didMoveCursor", {
        uri, position: { line: pos.line, character: pos.character } });
    }, CURSOR_REST_MS);
  }

  // where the cursor is not in the view, the user reads elsewhere and the server fills the pages there, so that a
  // click in them is answered from their cached state
  view(editor: vscode.TextEditor): void {
    if (!this.running() || editor !== vscode.window.activeTextEditor) return;
    const doc = editor.document;
    if (!vscode.languages.match(this.link.selector(), doc)) return;   // a document the server was never sent
    if (this.viewTimer) clearTimeout(this.viewTimer);
    this.viewTimer = setTimeout(() => {
      if (editor !== vscode.window.activeTextEditor) return;
      const at = (p: vscode.Position) => ({ line: p.line, character: p.character });
      void this.running()?.sendNotification("tandem/visibleRanges", {
        uri: doc.uri.toString(), ranges: editor.visibleRanges.map((r) => ({ start: at(r.start), end: at(r.end) })) });
    }, VIEW_REST_MS);
  }

  // the server has a better suggestion where one was shown (the whole page's answer, where a short prompt's was
  // shown, or the rest of an answer shown early): ask again while the document, its version and the cursor are as
  // the server saw them; its cache answers. The suggestion shown is hidden first: VS Code's explicit trigger keeps
  // the suggestion it shows when the new list differs (preserveCurrentCompletion), and the provider's own change
  // event is proposed API only
  async better(p: { uri: string; version: number; position: { line: number; character: number } }): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || this.link.snoozed()) return;
    const doc = editor.document, pos = editor.selection.active;
    if (doc.uri.toString() !== p.uri || doc.version !== p.version || !editor.selection.isEmpty ||
        pos.line !== p.position?.line || pos.character !== p.position?.character) return;
    await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    await vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
  }

  forget(uri: string): void {
    this.versions.delete(uri);
  }

  dispose(): void {
    if (this.cursorTimer) clearTimeout(this.cursorTimer);
    if (this.viewTimer) clearTimeout(this.viewTimer);
  }
}
