// What the extension sends the server, kept free of the `vscode` module so that tests run it in plain Node.

// a setting as `WorkspaceConfiguration.inspect` reports it
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

// The value the user set, from the most specific place that has one; undefined where only the default is. The
// server layers its own defaults and config files under what the editor sends, so a default sent from here would
// hide the user's config.toml.
export function userValue(s: Inspected | undefined): unknown {
  if (!s) return undefined;
  return s.workspaceFolderValue ?? s.workspaceValue ?? s.globalValue;
}

// `untrusted`: the settings whose workspace values are not taken (a workspace not trusted: package.json's
// restrictedConfigurations), only the user's own
export function userSettings(inspect: (key: string) => Inspected | undefined, keys: string[],
                             untrusted: string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const s = inspect(key);
    const v = untrusted.includes(key) ? s?.globalValue : userValue(s);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

// The languages the client attaches to: the defaults (the `onLanguage:` activation events, one per language of
// lsp_server/protocol/languages.py) and those the user turned on in `tandem.languages`. A language turned off
// stays attached: the server says no for it, and turning it on again needs no restart. `"*": true` attaches to
// every language (VS Code's selector reads "*" as any).
export function defaultLanguages(activationEvents: string[]): string[] {
  return activationEvents.filter((e) => e.startsWith("onLanguage:")).map((e) => e.slice("onLanguage:".length));
}

export function selectorLanguages(defaults: string[], languages: Record<string, unknown> | undefined): string[] {
  const added = Object.entries(languages ?? {}).filter(([, on]) => on === true)
    .map(([lang]) => lang);
  return [...new Set([...defaults, ...added])];
}
