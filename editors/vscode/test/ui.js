// The extension in a real VS Code: code-server (VS Code in the browser) with tandem.vsix installed, driven by
// Playwright in Debian's Chromium. Opens a Go file, types, waits for ghost text from the real models, accepts
// it with Tab, checks the line; scrolls the cursor off the screen; reads which settings are in effect and where
// they came from (the server's own config.toml, through the environment code-server passes on, then a value set
// in VS Code's user settings); asks for a block in a Python file and keeps a screenshot of it. With `next-edit`
// last, instead: renames a variable in a small Python function, waits for the next edit that renames its other
// uses, dismisses it with Escape; again in another file, keeps a screenshot of it and takes it with Tab; reads what
// the statistics counted. Usage:
//   node ui.js CODE_SERVER_DIR VSIX TANDEM_BIN WORKDIR SCREENSHOT [next-edit]
// CODE_SERVER_DIR holds node_modules/code-server and node_modules/playwright-core (see tests/editors/test_vscode.py).
const cp = require("child_process");
const fs = require("fs");
const path = require("path");
const net = require("net");

const [csDir, vsix, tandemBin, work, shot, scenario] = process.argv.slice(2);
const { chromium } = require(path.join(csDir, "node_modules", "playwright-core"));
const entry = path.join(csDir, "node_modules", "code-server", "out", "node", "entry.js");
const node = process.execPath;
const out = { steps: [] };
const note = (s) => { out.steps.push(s); console.error("ui: " + s); };

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// a number in the statistics document shown in the editor: the find widget brings its line into view
async function statsCounter(page, key) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+F");
  await page.keyboard.press("Control+A");
  await page.keyboard.type(`"${key}"`, { delay: 20 });
  await page.keyboard.press("Enter");
  await new Promise((r) => setTimeout(r, 500));
  const shown = await page.$$eval(".part.editor .monaco-editor .view-lines .view-line", (els) => els.map((e) => e.textContent));
  // Monaco renders spaces as non-breaking spaces
  const m = shown.map((l) => l.replace(/\u00a0/g, " ")).join("\n").match(new RegExp(`"${key}": (\\d+)`));
  return m ? Number(m[1]) : null;
}

// a setting in effect as the statistics document shows it (tandem/stats "settings": {key, value, origin} each,
// JSON.stringify'd one field a line): null where it is not there
async function statsSetting(page, key) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+F");
  await page.keyboard.press("Control+A");
  await page.keyboard.type(`"key": "${key}"`, { delay: 20 });
  await page.keyboard.press("Enter");
  await new Promise((r) => setTimeout(r, 500));
  const shown = await page.$$eval(".part.editor .monaco-editor .view-lines .view-line", (els) => els.map((e) => e.textContent));
  const text = shown.map((l) => l.replace(/\u00a0/g, " ")).join("\n");
  const m = text.match(new RegExp(`"key": "${key}",\\s*"value": (.+?),\\s*"origin": ("(?:[^"\\\\]|\\\\.)*")`));
  return m ? { value: JSON.parse(m[1]), origin: JSON.parse(m[2]) } : null;
}

async function showStats(page) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await page.keyboard.type("Tandem: Show Statistics", { delay: 20 });
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => [...document.querySelectorAll(".tab")].some((t) => /statistics\.json/.test(t.textContent || "")),
                             null, { timeout: 30000 });
  await new Promise((r) => setTimeout(r, 1000));
}

// the ghost text shown, a line each as the screen shows it: the first line's decorations (one per colour), then
// the block's lines below it, their text grouped by where it sits
async function ghostLines(page) {
  return page.$$eval(".part.editor .ghost-text-decoration, .part.editor .ghost-text", (els) => {
    const rows = new Map();
    for (const el of els.filter((e) => !els.some((o) => o !== e && o.contains(e)))) {
      const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(n);
        const r = range.getBoundingClientRect();
        if (!r.height) continue;
        const top = Math.round(r.top);
        rows.set(top, [...(rows.get(top) || []), { left: r.left, text: n.textContent.replace(/\u00a0/g, " ") }]);
      }
    }
    return [...rows.entries()].sort((a, b) => a[0] - b[0])
      .map(([, parts]) => parts.sort((a, b) => a.left - b.left).map((p) => p.text).join(""))
      .filter((l) => l.trim());
  });
}

// a user setting typed into VS Code's settings editor (Ctrl+,), found by its id; the editor closed again
async function setSetting(page, key, value, shot) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Comma");
  // the search box has the focus when the settings editor opens
  await page.waitForSelector(".settings-editor .settings-header", { timeout: 30000 });
  await new Promise((r) => setTimeout(r, 500));
  await page.keyboard.press("Control+A");
  await page.keyboard.type(`@id:tandem.${key}`, { delay: 10 });
  const input = ".settings-editor .setting-item .monaco-inputbox input";
  try {
    await page.waitForFunction((k) => [...document.querySelectorAll(".settings-editor .setting-item")]
      .some((e) => (e.textContent || "").includes(k)), key.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase()),
      { timeout: 15000 });
    await page.waitForSelector(input, { timeout: 15000 });
  } catch (e) {
    await page.screenshot({ path: shot.replace(/\.png$/, `-setting-${key}.png`) });
    throw e;
  }
  await page.fill(input, String(value));
  await page.keyboard.press("Enter");
  await new Promise((r) => setTimeout(r, 1000));
  for (let i = 0; i < 3 && await page.$(".settings-editor"); i++) {
    await page.keyboard.press(i < 2 ? "Escape" : "Control+W");
    await new Promise((r) => setTimeout(r, 500));
  }
}

// VS Code's settings for a quiet, offline workbench, beside the test's own
const QUIET = {
  "editor.inlineSuggest.enabled": true, "editor.quickSuggestions": { other: false, comments: false, strings: false },
  "workbench.startupEditor": "none", "security.workspace.trust.enabled": false, "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false, "update.mode": "none", "workbench.tips.enabled": false,
  "chat.disableAIFeatures": true, "workbench.secondarySideBar.defaultVisibility": "hidden",
};

// code-server on a workspace of `files` (name -> text) with the extension installed and these user settings (and
// keybindings, where given), and Chromium on it; close() ends both
async function launch(settings, files, keybindings) {
  const userData = path.join(work, "user-data"), exts = path.join(work, "extensions"), ws = path.join(work, "ws");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.mkdirSync(ws, { recursive: true });
  const settingsFile = path.join(userData, "User", "settings.json");
  fs.writeFileSync(settingsFile, JSON.stringify({ ...settings, ...QUIET }));
  if (keybindings) fs.writeFileSync(path.join(userData, "User", "keybindings.json"), JSON.stringify(keybindings));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(ws, name), text);
  cp.execFileSync(node, [entry, "--install-extension", vsix, "--extensions-dir", exts, "--user-data-dir", userData],
                  { stdio: "inherit" });
  note("extension installed");
  const port = await freePort();
  const server = cp.spawn(node, [entry, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--user-data-dir", userData,
    "--extensions-dir", exts, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", ws],
    { stdio: ["ignore", "inherit", "inherit"] });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox",
    "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync"] });
  const close = async () => { await browser.close(); server.kill(); };
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    for (let i = 0; i < 100; i++) {
      try { await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`); break; }
      catch { await new Promise((r) => setTimeout(r, 300)); }
    }
    return { page, userData, settingsFile, ws, close };
  } catch (e) {
    await close();
    throw e;
  }
}

// the editor's lines as they show, top to bottom (Monaco renders spaces as non-breaking spaces)
async function editorLines(page) {
  return page.$$eval(".part.editor .monaco-editor .view-lines .view-line", (els) => els
    .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
    .map((e) => (e.textContent || "").replace(/\u00a0/g, " ")));
}

// a next edit as the screen shows it: the text of the lines struck through, and the text after the lines' ends
// (decorations' `after` content is a CSS ::after, outside the DOM's text)
async function nextEditOnScreen(page) {
  return page.$$eval(".part.editor .monaco-editor .view-lines .view-line", (els) => {
    const out = { struck: [], beside: [] };
    for (const line of els.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))) {
      let struck = "";
      for (const span of line.querySelectorAll("span")) {
        if (!span.children.length && getComputedStyle(span).textDecorationLine.includes("line-through")) {
          struck += span.textContent;
        }
        const after = getComputedStyle(span, "::after").content;
        if (after && after !== "none" && after !== "normal") {
          out.beside.push(after.replace(/^"|"$/g, "").replace(/\\"/g, '"').replace(/\u00a0/g, " "));
        }
      }
      if (struck.trim()) out.struck.push(struck.replace(/\u00a0/g, " "));
    }
    return out;
  });
}

async function waitForNextEdit(page, ms) {
  for (const t0 = Date.now(); Date.now() - t0 < ms; ) {
    const shown = await nextEditOnScreen(page);
    if (shown.beside.length || shown.struck.length) return shown;
    await new Promise((r) => setTimeout(r, 500));
  }
  return null;
}

// the counters of one block of the statistics document ("next_edit": {...}): the find widget brings its line into
// view, the lines below it are read up to the block's end
async function statsBlock(page, block) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+F");
  await page.keyboard.press("Control+A");
  await page.keyboard.type(`"${block}": {`, { delay: 20 });
  await page.keyboard.press("Enter");
  await page.keyboard.press("Escape");
  await new Promise((r) => setTimeout(r, 500));
  // scrolled a line at a time (Ctrl+Down) until the block's end shows below its start
  for (let scrolled = 0; scrolled < 40; scrolled++) {
    const lines = await editorLines(page);
    const at = lines.findIndex((l) => l.includes(`"${block}": {`));
    if (at < 0) return null;
    const out = {};
    for (let i = at + 1, depth = 1; i < lines.length; i++) {
      const m = lines[i].match(/^\s*"(\w+)": (-?[\d.]+|null)/);
      if (m && depth === 1) out[m[1]] = m[2] === "null" ? null : Number(m[2]);
      depth += (lines[i].match(/[{[]/g) || []).length - (lines[i].match(/[}\]]/g) || []).length;
      if (depth === 0) return out;
    }
    await page.keyboard.press("Control+ArrowDown");
    await new Promise((r) => setTimeout(r, 200));
  }
  return null;
}

// the cursor to the start of a line's code (Ctrl+G), where the test types
async function toLine(page, line) {
  await page.keyboard.press("Control+G");
  await page.waitForSelector(".quick-input-widget", { state: "visible", timeout: 10000 });
  await page.keyboard.type(String(line), { delay: 20 });
  await page.keyboard.press("Enter");
  await page.waitForSelector(".quick-input-widget", { state: "hidden", timeout: 10000 });
  await page.keyboard.press("End");
  await page.keyboard.press("Home");
  await new Promise((r) => setTimeout(r, 300));
}

async function openFile(page, name) {
  await page.click(`.explorer-folders-view .monaco-list-row >> text=${name}`, { timeout: 60000 });
  await page.waitForFunction((n) => [...document.querySelectorAll(".tab")].some((t) => (t.textContent || "").includes(n)),
                             name, { timeout: 30000 });
  await page.click(".part.editor .monaco-editor .view-lines");
}

// The next-edit scenario: two small Python functions where a variable's name, changed on its first line, is still
// the old one on the lines below; the real models propose the follow-up.
const SHAPES = `def describe(shape):
    name = shape.name
    print(f"{name} has {len(shape.points)} sides")
    return name
`;
const CART = `def order_total(items):
    total = 0
    for item in items:
        total += item.price * item.quantity
    return total
`;
// the same below 40 lines of constants, for an edit below the screen's last line
const COUNTS = Array.from({ length: 40 }, (_, i) => `LIMIT_${i} = ${i * 10}\n`).join("") + `

def count_rows(rows):
    count = len(rows)
    for row in rows:
        print(row, "of", count)
    return count
`;
// (the old name's uses are inside their lines: where a use starts a line in a loop's body, the target's choice
// between the new name and another statement is close, and the check goes either way)
const COUNT_LINE = 44;   // "    count = len(rows)", 1-based

// a rename's repeat at the end of a file without a final newline, LF and CRLF: `size` is used last on the last line
const AREA = "def area(width, height):\n    size = width * height\n    return size";
// where an edit shows and another key is the editor's: `size` renamed on line 2, its uses on the lines below
const KEYS = "def area(width, height):\n    size = width * height\n    if size > 100:\n        return 100\n    return size\n";
// a snippet the user inserts with a key: the rename as two tab stops
const SNIPPET_KEY = { key: "ctrl+alt+j", command: "editor.action.insertSnippet", when: "editorTextFocus",
                      args: { snippet: "${1:area}_${2:size}" } };

// the cursors the editor shows (one per selection)
async function cursorCount(page) {
  return page.$$eval(".part.editor .monaco-editor .cursors-layer .cursor", (els) => els.length);
}

async function suggestWidgetShown(page) {
  return page.$$eval(".part.editor .monaco-editor .suggest-widget.visible", (els) => els.length > 0);
}

// the status bar's cursor item ("Ln 2, Col 10 (4 selected)")
async function cursorItem(page) {
  const items = await page.$$eval(".statusbar-item", (els) => els.map((e) => e.textContent || ""));
  return (items.find((t) => /Ln \d+, Col \d+/.test(t)) || "").trim();
}

// `size` renamed on line 2 of a file by typing `area_` before it; the next edit (the rename's repeat) awaited
async function renamedWithEdit(page, name) {
  await page.keyboard.press("Escape");
  await openFile(page, name);
  await toLine(page, 2);
  await page.keyboard.type("area_", { delay: 60 });
  return waitForNextEdit(page, 120000);
}

// the line numbers the editor shows
async function shownLineNumbers(page) {
  return page.$$eval(".part.editor .monaco-editor .margin-view-overlays .line-numbers",
                     (els) => els.map((e) => Number(e.textContent)).filter((n) => n > 0));
}

// the cursor's line as the status bar says it ("Ln 12, Col 5")
async function cursorLine(page) {
  const items = await page.$$eval(".statusbar-item", (els) => els.map((e) => e.textContent || ""));
  const m = items.join(" ").match(/Ln (\d+), Col \d+/);
  return m ? Number(m[1]) : null;
}

async function nextEdit() {
  const settings = { "tandem.serverPath": tandemBin, "tandem.timeBudgetMs": 30000 };
  const { page, settingsFile, ws, close } = await launch(settings, {
    "shapes.py": SHAPES, "cart.py": CART, "counts.py": COUNTS, "eof.py": AREA, "eof_crlf.py": AREA.replace(/\n/g, "\r\n"),
    "keys_suggest.py": KEYS, "keys_cursors.py": KEYS, "keys_snippet.py": KEYS }, [SNIPPET_KEY]);
  out.ok = true;
  const fail = async (why) => {
    out.ok = false;
    out.why = why;
    await page.screenshot({ path: shot.replace(/\.png$/, "-failed.png") });
  };
  try {
    await page.waitForSelector(".monaco-workbench", { timeout: 120000 });
    await openFile(page, "shapes.py");
    await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")]
      .some((e) => /Tandem (ready|[0-9.]+ tok\/s)/.test(e.textContent || "")), null, { timeout: 180000 });
    note("server ready");
    // name -> shape_name on line 2; Escape drops what comes, and the text stays as the user left it
    await toLine(page, 2);
    await page.keyboard.type("shape_", { delay: 60 });
    const t0 = Date.now();
    out.dismissed = { shown: await waitForNextEdit(page, 120000), ms: Date.now() - t0 };
    note(`next edit in shapes.py after ${out.dismissed.ms} ms: ${JSON.stringify(out.dismissed.shown)}`);
    if (!out.dismissed.shown) await fail("no next edit in shapes.py");
    await page.keyboard.press("Escape");
    await new Promise((r) => setTimeout(r, 1000));
    out.dismissed.after = await nextEditOnScreen(page);
    out.dismissed.text = (await editorLines(page)).join("\n");
    note(`after Escape: ${JSON.stringify(out.dismissed.after)}`);
    // total -> subtotal on line 2 of the other file; Tab takes the next edit
    await openFile(page, "cart.py");
    await toLine(page, 2);
    await page.keyboard.type("sub", { delay: 60 });
    const t1 = Date.now();
    out.accepted = { shown: await waitForNextEdit(page, 120000), ms: Date.now() - t1 };
    note(`next edit in cart.py after ${out.accepted.ms} ms: ${JSON.stringify(out.accepted.shown)}`);
    if (!out.accepted.shown) await fail("no next edit in cart.py");
    await new Promise((r) => setTimeout(r, 500));
    await page.screenshot({ path: shot });
    // ghost text, where some shows at the cursor, takes Tab first (the keybinding gives way to it)
    out.accepted.ghost = await page.$$eval(".ghost-text-decoration, .ghost-text", (els) => els.length);
    await page.keyboard.press("Tab");
    await new Promise((r) => setTimeout(r, 1000));
    out.accepted.after = await nextEditOnScreen(page);
    out.accepted.text = (await editorLines(page)).join("\n");
    note(`after Tab:\n${out.accepted.text}`);
    await showStats(page);
    out.stats = await statsBlock(page, "next_edit");
    note(`next_edit statistics: ${JSON.stringify(out.stats)}`);
    // an edit below the screen: once the rename is typed (typing brings the lines below the cursor into view),
    // the view scrolled (Ctrl+Up moves it, not the cursor) until the cursor's line is the last one shown; the
    // hint says where the edit is, the first Tab goes there, the second takes it
    await page.keyboard.press("Escape");
    await openFile(page, "counts.py");
    await toLine(page, COUNT_LINE);
    await page.keyboard.type("total_", { delay: 60 });
    const t2 = Date.now();
    for (let i = 0; i < 40; i++) {
      const shown = await shownLineNumbers(page);
      if (!shown.includes(COUNT_LINE + 1)) break;
      await page.keyboard.press("Control+ArrowUp");
      await new Promise((r) => setTimeout(r, 100));
    }
    out.jumped = { before: await shownLineNumbers(page) };
    out.jumped.shown = await waitForNextEdit(page, 120000);
    out.jumped.ms = Date.now() - t2;
    note(`next edit in counts.py after ${out.jumped.ms} ms: ${JSON.stringify(out.jumped.shown)}`);
    if (!out.jumped.shown) await fail("no next edit in counts.py");
    await page.keyboard.press("Tab");
    await new Promise((r) => setTimeout(r, 1000));
    out.jumped.cursor = await cursorLine(page);
    out.jumped.there = await nextEditOnScreen(page);
    note(`after the first Tab: line ${out.jumped.cursor}, ${JSON.stringify(out.jumped.there)}`);
    await page.keyboard.press("Tab");
    await new Promise((r) => setTimeout(r, 1000));
    out.jumped.after = await nextEditOnScreen(page);
    out.jumped.text = (await editorLines(page)).join("\n");
    note(`after the second Tab:\n${out.jumped.text}`);
    await showStats(page);
    out.stats_end = await statsBlock(page, "next_edit");
    note(`next_edit statistics at the end: ${JSON.stringify(out.stats_end)}`);
    // from here no ghost text, which would take Tab and Escape first (VS Code reads its settings file again)
    fs.writeFileSync(settingsFile, JSON.stringify({ ...settings, ...QUIET, "editor.inlineSuggest.enabled": false }));
    await new Promise((r) => setTimeout(r, 2000));
    // the end of a file without a final newline: the repeat on its last line, taken with Tab and saved; the file
    // on disk ends as it did, without a newline, in its own line ends
    out.eof = {};
    for (const name of ["eof.py", "eof_crlf.py"]) {
      const shown = await renamedWithEdit(page, name);
      note(`next edit in ${name}: ${JSON.stringify(shown)}`);
      if (!shown) await fail(`no next edit in ${name}`);
      await page.keyboard.press("Tab");
      await new Promise((r) => setTimeout(r, 1000));
      const after = await nextEditOnScreen(page);
      await page.keyboard.press("Control+S");
      const file = path.join(ws, name);
      for (let i = 0; i < 50 && fs.readFileSync(file, "utf8").includes("return size"); i++) {
        await new Promise((r) => setTimeout(r, 200));
      }
      out.eof[name] = { shown, after, file: fs.readFileSync(file, "utf8") };
      note(`${name} saved: ${JSON.stringify(out.eof[name].file)}`);
    }
    // Escape with the suggest widget open: the widget closes, the edit stays
    out.keys = {};
    let shown = await renamedWithEdit(page, "keys_suggest.py");
    if (!shown) await fail("no next edit in keys_suggest.py");
    await page.keyboard.press("Control+Space");
    await page.waitForSelector(".part.editor .monaco-editor .suggest-widget.visible", { timeout: 30000 });
    out.keys.suggest = { shown, widget: await suggestWidgetShown(page) };
    await page.keyboard.press("Escape");
    await new Promise((r) => setTimeout(r, 1000));
    out.keys.suggest.after = { widget: await suggestWidgetShown(page), edit: await nextEditOnScreen(page) };
    note(`Escape with the suggest widget: ${JSON.stringify(out.keys.suggest)}`);
    // taken, so that this open file, context for the next files' checks, no longer shows the old name's uses
    await page.keyboard.press("Tab");
    await new Promise((r) => setTimeout(r, 1000));
    // Escape with two cursors: one is left, the edit stays
    shown = await renamedWithEdit(page, "keys_cursors.py");
    if (!shown) await fail("no next edit in keys_cursors.py");
    await page.keyboard.press("Shift+Alt+ArrowDown");   // a cursor on the line below (Linux's key)
    await new Promise((r) => setTimeout(r, 500));
    out.keys.cursors = { shown, cursors: await cursorCount(page) };
    await page.keyboard.press("Escape");
    await new Promise((r) => setTimeout(r, 1000));
    out.keys.cursors.after = { cursors: await cursorCount(page), edit: await nextEditOnScreen(page) };
    note(`Escape with two cursors: ${JSON.stringify(out.keys.cursors)}`);
    await page.keyboard.press("Tab");
    await new Promise((r) => setTimeout(r, 1000));
    // the rename made by a snippet (`size` selected, the snippet's `area` and `size` its stops): the edit shows
    // while the first stop is selected, and Tab goes to the second stop, the edit still shown and not applied
    await page.keyboard.press("Escape");
    await openFile(page, "keys_snippet.py");
    await toLine(page, 2);
    await page.keyboard.press("Control+Shift+ArrowRight");
    await page.keyboard.press("Control+Alt+J");
    shown = await waitForNextEdit(page, 120000);
    if (!shown) await fail("no next edit in keys_snippet.py");
    out.keys.snippet = { shown, cursor: await cursorItem(page) };
    await page.keyboard.press("Tab");
    await new Promise((r) => setTimeout(r, 1000));
    out.keys.snippet.after = { cursor: await cursorItem(page), edit: await nextEditOnScreen(page),
                               text: (await editorLines(page)).join("\n") };
    note(`Tab in a snippet: ${JSON.stringify(out.keys.snippet)}`);
  } catch (e) {
    await fail(String(e && e.stack || e));
  } finally {
    await close();
  }
}

async function main() {
  // first a server path that is wrong (the message with its actions), fixed once the workbench is up
  const src = fs.readFileSync(path.join(__dirname, "..", "..", "..", "fixtures", "lsp", "store.go"), "utf8");
  // the demo: to_api's empty dict (its blank line taken out: the test types the Enter after the opener)
  const demo = fs.readFileSync(path.join(__dirname, "..", "..", "..", "fixtures", "demo", "orders.py"), "utf8").split("\n");
  const opener = demo.findIndex((l) => l.includes("def to_api")) + 1;
  demo.splice(opener + 1, 1);
  // next edits on, as users have them: a completion request stops a next edit's rewrite that holds the model
  const { page, userData, settingsFile, close } = await launch(
    { "tandem.serverPath": "/nonexistent/tandem", "tandem.timeBudgetMs": 30000, "tandem.logLevel": "debug" },
    // the Go file ends inside the empty body, so Ctrl+End puts the cursor where the code goes
    { "store.go": src.slice(0, src.lastIndexOf("\t\n}")) + "\t", "orders.py": demo.join("\n") });
  try {
    await page.waitForSelector(".monaco-workbench", { timeout: 120000 });
    note("workbench");
    // open the file from the explorer; the editor is the one in the editor part (the chat input is one too)
    await page.click(".explorer-folders-view .monaco-list-row >> text=store.go", { timeout: 60000 });
    const editor = ".part.editor .monaco-editor .view-lines";
    await page.waitForSelector(editor, { timeout: 60000 });
    await page.click(editor);
    await page.keyboard.press("Control+End");
    note("file open");
    // no server at the configured path: an error with its actions, then the path fixed restarts it
    const toast = ".notifications-toasts .notification-toast";
    await page.waitForSelector(`${toast} >> text=/not an executable file/`, { timeout: 60000 });
    out.error_actions = await page.$$eval(`${toast} .monaco-button`, (els) => els.map((e) => (e.textContent || "").trim()));
    note(`wrong serverPath: ${out.error_actions.join(", ")}`);
    // "Set Path" opens the setting; typed there, the path fixed restarts the server
    await page.click(`${toast} .monaco-button >> text=Set Path`);
    // a machine setting: code-server's window is a remote one, so the remote's settings open, filtered to it
    const input = '.settings-editor .setting-item:has-text("Server Path") .monaco-inputbox input';
    try {
      await page.waitForSelector(input, { timeout: 30000 });
    } catch (e) {
      await page.screenshot({ path: shot.replace(/\.png$/, "-settings.png") });
      throw e;
    }
    await page.fill(input, tandemBin);
    await page.keyboard.press("Enter");
    await new Promise((r) => setTimeout(r, 1500));
    // the settings open as a modal editor here: closed, back to the file
    for (let i = 0; i < 3 && await page.$(".monaco-modal-editor-block"); i++) {
      await page.keyboard.press(i < 2 ? "Escape" : "Control+W");
      await new Promise((r) => setTimeout(r, 500));
    }
    await page.click(".tab >> text=store.go");
    await page.click(editor);
    await page.keyboard.press("Control+End");
    // wait for the server to be ready: the status bar item says tok/s or "ready"
    try {
      await page.waitForFunction(() => [...document.querySelectorAll(".statusbar-item")]
        .some((e) => /Tandem (ready|[0-9.]+ tok\/s)/.test(e.textContent || "")), null, { timeout: 180000 });
    } catch (e) {
      out.status_bar = await page.$$eval(".statusbar-item", (els) => els.map((x) => (x.textContent || "").trim()).filter(Boolean));
      await page.screenshot({ path: shot.replace(/\.png$/, "-not-ready.png") });
      throw e;
    }
    note("server ready");
    // a move with no edit in it: the extension reports it (tandem/didMoveCursor), checked in the stats below
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("Control+End");
    await new Promise((r) => setTimeout(r, 1000));
    await page.keyboard.type("value, ok := s.items[", { delay: 60 });
    try {
      await page.waitForSelector(".ghost-text-decoration, .ghost-text", { timeout: 60000 });
    } catch (e) {
      await page.screenshot({ path: shot.replace(/\.png$/, "-failed.png") });
      throw e;
    }
    const ghost = await page.$$eval(".ghost-text-decoration, .ghost-text", (els) => els.map((e) => e.textContent).join(""));
    out.ghost = ghost;
    note("ghost text");
    // accept the next word first (the extension's Ctrl+Right: VS Code's accept next word, told to the server),
    // then the rest with Tab
    if (/\w/.test(ghost)) {
      await page.keyboard.press("Control+ArrowRight");
      await new Promise((r) => setTimeout(r, 700));
      note("next word accepted");
    }
    const rest = await page.$$eval(".ghost-text-decoration, .ghost-text", (els) => els.map((e) => e.textContent).join(""));
    if (rest.trim()) await page.keyboard.press("Tab");   // a one-word suggestion is all taken by then
    await new Promise((r) => setTimeout(r, 500));
    const lines = await page.$$eval(".part.editor .monaco-editor .view-lines .view-line", (els) => els.map((e) => e.textContent));
    // Monaco renders spaces as non-breaking spaces
    out.line = (lines.map((l) => l.replace(/\u00a0/g, " ")).find((l) => l.includes("value, ok := s.items[")) || "");
    out.ok = out.line.trim().length > "value, ok := s.items[".length && out.line.includes(ghost.trim().split("\n")[0]);
    // the status item's menu: snooze and wake up, off and on, off for this language and on again
    const item = '.statusbar-item:has-text("Tandem")';
    const pick = async (label) => {
      await page.click(item);
      await page.waitForSelector(".quick-input-widget", { state: "visible", timeout: 10000 });
      await page.keyboard.type(label, { delay: 20 });
      await page.keyboard.press("Enter");
      await new Promise((r) => setTimeout(r, 800));
    };
    const icon = (name) => page.waitForSelector(`${item} .codicon-${name}`, { timeout: 15000 }).then(() => true, () => false);
    out.menu = {};
    await pick("Snooze");
    await page.keyboard.type("5 minutes", { delay: 20 });   // then how long
    await page.keyboard.press("Enter");
    out.menu.snoozed = await icon("bell-slash");
    await pick("Wake up");
    out.menu.woke = await icon("sparkle");
    await pick("Turn completions off");
    out.menu.off = await icon("circle-slash");
    await pick("Turn completions on");
    out.menu.on = await icon("sparkle");
    await pick("Off for go");
    out.menu.go_off = JSON.parse(fs.readFileSync(settingsFile, "utf8"))["tandem.languages"]?.go === false;
    await pick("On for go");
    out.menu.go_on = JSON.parse(fs.readFileSync(settingsFile, "utf8"))["tandem.languages"]?.go === true;
    note(`menu: ${JSON.stringify(out.menu)}`);
    out.ok = out.ok && Object.values(out.menu).every(Boolean);
    await page.click(editor);
    // the server's statistics, as the extension's command shows them (a JSON document): find the counter
    await showStats(page);
    out.cursor_moves = await statsCounter(page, "cursor_moves");
    note(`cursor moves reported: ${out.cursor_moves}`);
    out.ok = out.ok && out.cursor_moves > 0;
    // and how many times the models loaded: the configuration the extension sends while they load must not
    // load them again
    out.loads = await statsCounter(page, "loads");
    // set only in the server's config.toml (XDG_CONFIG_HOME): in effect, and said to come from there
    out.from_file = { backend: await statsSetting(page, "backend"),
                      maxTokensSingleLine: await statsSetting(page, "maxTokensSingleLine") };
    note(`from config.toml: ${JSON.stringify(out.from_file)}`);
    note(`model loads: ${out.loads}`);
    out.partly_accepted = await statsCounter(page, "partly_accepted");
    note(`partly accepted: ${out.partly_accepted}`);
    // the statistics are a document of the extension's own: shown again, the server still holds one document
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    await page.keyboard.type("Tandem: Show Statistics", { delay: 20 });
    await page.keyboard.press("Enter");
    await new Promise((r) => setTimeout(r, 1000));
    out.documents = await statsCounter(page, "open_documents");
    note(`documents the server holds: ${out.documents}`);
    // a scroll that leaves the cursor off the screen: the extension says what is shown (tandem/visibleRanges)
    // and the server takes it as the place to fill; the file is made longer than the screen first
    await page.keyboard.press("Escape");
    await page.click(".tabs-container .tab >> text=store.go");
    await page.click(editor);
    await page.keyboard.press("Control+End");
    for (let i = 0; i < 80; i++) await page.keyboard.press("Enter");
    await new Promise((r) => setTimeout(r, 500));
    // Alt+PageUp scrolls a page up and leaves the cursor where it is (headless Chromium's wheel events do not
    // reach Monaco here)
    for (let i = 0; i < 6; i++) await page.keyboard.press("Alt+PageUp");
    await new Promise((r) => setTimeout(r, 1500));
    await page.keyboard.press("F1");
    await page.keyboard.type("Tandem: Show Statistics", { delay: 20 });
    await page.keyboard.press("Enter");
    await new Promise((r) => setTimeout(r, 1000));
    out.views = await statsCounter(page, "views");
    note(`screens read away from the cursor: ${out.views}`);
    // the same setting in VS Code's user settings: the editor's value wins; and for the block below, its first
    // line answered as soon as it is whole (earlyAnswerMs 1), the rest once its generation ends, as a better
    // answer (tandem/betterCompletion) that replaces the suggestion shown; no short prompt first
    out.editor_value = 32;
    await setSetting(page, "maxTokensSingleLine", out.editor_value, shot);
    await setSetting(page, "earlyAnswerMs", 1, shot);
    await setSetting(page, "promptBudgetMs", -1, shot);
    out.user_settings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
    note(`user settings: ${JSON.stringify(out.user_settings)}`);
    // a block: Enter after `return {`, as a user types it (VS Code indents the new line), its lines waited for
    // (the first answer is what was whole early; the rest follows it, tandem/betterCompletion); asked again from
    // the command palette only if nothing comes
    await page.keyboard.press("Escape");
    await page.click(".explorer-folders-view .monaco-list-row >> text=orders.py", { timeout: 30000 });
    await page.waitForFunction(() => [...document.querySelectorAll(".tab")].some((t) => /orders\.py/.test(t.textContent || "")),
                               null, { timeout: 30000 });
    await page.click(editor);
    await page.keyboard.press("Control+G");
    await page.waitForSelector(".quick-input-widget", { state: "visible", timeout: 10000 });
    await page.keyboard.type(String(opener + 1), { delay: 20 });
    await page.keyboard.press("Enter");
    await page.waitForSelector(".quick-input-widget", { state: "hidden", timeout: 10000 });
    await page.keyboard.press("End");
    await new Promise((r) => setTimeout(r, 300));
    await page.keyboard.press("Enter");
    out.block = [];
    out.block_first = null;   // the first suggestion shown there (the early answer's line)
    // the block waited for until it stops growing (4 s the same, at least 3 lines), 60 s at most
    for (let t0 = Date.now(), same = 0, asked = false; Date.now() - t0 < 60000; ) {
      await new Promise((r) => setTimeout(r, 1000));
      const now = await ghostLines(page);
      if (out.block_first === null && now.length) out.block_first = now;
      same = now.length && now.join("\n") === out.block.join("\n") ? same + 1 : 0;
      out.block = now;
      if (same >= 4 && now.length >= 3) break;
      if (!asked && !now.length && Date.now() - t0 > 20000) {
        asked = true;
        await page.keyboard.press("F1");
        await page.keyboard.type("Trigger Inline Suggestion", { delay: 20 });
        await page.keyboard.press("Enter");
      }
    }
    note(`block: ${out.block.length} lines`);
    await page.screenshot({ path: shot });
    out.ok = out.ok && out.block.length >= 3;
    await page.keyboard.press("Escape");
    await showStats(page);
    out.taken = await statsCounter(page, "taken");
    note(`block first shown: ${JSON.stringify(out.block_first)}; better answers taken: ${out.taken}`);
    out.from_editor = { backend: await statsSetting(page, "backend"),
                        maxTokensSingleLine: await statsSetting(page, "maxTokensSingleLine") };
    note(`with the user's VS Code setting: ${JSON.stringify(out.from_editor)}`);
    // the health report (tandem/health) in a read-only document
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    await page.keyboard.type("Tandem: Show Health", { delay: 20 });
    await page.keyboard.press("Enter");
    try {
      await page.waitForFunction(() => [...document.querySelectorAll(".tab")].some((t) => /health\.txt/.test(t.textContent || "")),
                                 null, { timeout: 30000 });
      await new Promise((r) => setTimeout(r, 1000));
      out.health = (await page.$$eval(".part.editor .monaco-editor .view-lines .view-line", (els) => els.map((e) => e.textContent)))
        .map((l) => l.replace(/\u00a0/g, " ")).filter((l) => l.trim());
    } catch {
      out.health = null;
      out.toasts = await page.$$eval(".notifications-toasts .notification-list-item-message", (els) => els.map((e) => (e.textContent || "").trim()));
    }
    note(`health: ${out.health ? out.health.length + " lines" : "no document"}`);
    // Pull Models runs the server the extension found (`models pull`); the models are there, so it only checks them
    await page.keyboard.press("F1");
    await page.keyboard.type("Tandem: Pull Models", { delay: 20 });
    await page.keyboard.press("Enter");
    out.pulled = await page.waitForSelector(".notifications-toasts .notification-toast >> text=/default models are in place/",
                                            { timeout: 180000 }).then(() => true, () => false);
    note(`pull models: ${out.pulled}`);
    // tandem.logLevel "debug" reached the server as TANDEM_LOG: its log has the scheduler's decisions
    const logs = path.join(userData, "logs");
    const channel = fs.readdirSync(logs).map((d) => path.join(logs, d, "exthost1", "tandem-lsp.tandem", "Tandem.log"))
      .filter((f) => fs.existsSync(f));
    out.debug_lines = channel.map((f) => fs.readFileSync(f, "utf8")).join("\n").split("\n")
      .filter((l) => /tandem:\s+\d+ ms answered/.test(l)).length;
    note(`debug lines in the log: ${out.debug_lines}`);
  } finally {
    await close();
  }
}

(scenario === "next-edit" ? nextEdit() : main()).then(() => { console.log(JSON.stringify(out)); process.exit(out.ok ? 0 : 1); })
      .catch((e) => { out.ok = false; out.error = String(e && e.stack || e); console.log(JSON.stringify(out)); process.exit(1); });
