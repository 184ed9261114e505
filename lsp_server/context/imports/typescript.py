"""TypeScript / JavaScript: relative specifiers (`./x`, `../y`, with .ts/.tsx/.d.ts/.js/.jsx/.mjs/.cjs and
/index.*), tsconfig.json's (or jsconfig.json's) `compilerOptions.paths` and `baseUrl`, `export ... from` (a barrel
file's re-exports) and `require('./x')`."""
from __future__ import annotations

import json
import os
import re

from ..files import ProjectFiles
from ..syntax import text_of
from .base import Import, unquote

TS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")
REQUIRE = re.compile(r"(?:const|let|var)\s+(\{[^}]{0,400}\}|[A-Za-z_$][\w$]*)\s*=\s*require\(\s*['\"]([^'\"]+)['\"]\s*\)")


def _tsconfig(project: ProjectFiles, path: str) -> tuple[str, str | None, dict[str, list[str]]]:
    """(folder the paths are relative to, baseUrl folder or None, paths) of the nearest tsconfig.json."""
    cfg = project.upward(os.path.dirname(path), ("tsconfig.json", "jsconfig.json"))
    if cfg is None:
        return "", None, {}
    options: dict = {}
    chain, seen = cfg, set()
    base_dir = os.path.dirname(cfg)
    paths_dir = None
    for _ in range(3):   # `extends`, followed a little: the nearest file's options win
        if chain is None or chain in seen:
            break
        seen.add(chain)
        data = _jsonc(project.source(chain) or "")
        opts = data.get("compilerOptions") if isinstance(data.get("compilerOptions"), dict) else {}
        here = os.path.dirname(chain)
        for k in ("baseUrl", "paths"):
            if k in opts and k not in options:
                options[k] = opts[k]
                if k == "baseUrl":
                    options["_base_from"] = here
                if k == "paths":
                    paths_dir = here
        ext = data.get("extends")
        chain = os.path.normpath(os.path.join(here, ext + ("" if ext.endswith(".json") else ".json"))) \
            if isinstance(ext, str) and ext.startswith(".") else None
    base_url = os.path.normpath(os.path.join(options["_base_from"], options["baseUrl"])) \
        if isinstance(options.get("baseUrl"), str) else None
    paths = options.get("paths") if isinstance(options.get("paths"), dict) else {}
    paths = {k: [v for v in vs if isinstance(v, str)] for k, vs in paths.items() if isinstance(vs, list)}
    return base_url or paths_dir or base_dir, base_url, paths


def _ts_file(project: ProjectFiles, base: str) -> str | None:
    stem, ext = os.path.splitext(base)
    cands = []
    if ext in (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"):
        if ext in (".js", ".jsx", ".mjs", ".cjs"):   # TypeScript's ESM imports name the .js it compiles to
            cands += [stem + ".ts", stem + ".tsx", stem + ".d.ts", stem + ".mts"]
        cands.append(base)
    cands += [base + e for e in TS_EXTENSIONS] + [os.path.join(base, "index" + e) for e in TS_EXTENSIONS]
    return next((c for c in cands if project.found(c)), None)


def _ts_module(project: ProjectFiles, path: str, spec: str) -> str | None:
    if spec.startswith("."):
        return _ts_file(project, os.path.normpath(os.path.join(os.path.dirname(path), spec)))
    paths_dir, base_url, paths = _tsconfig(project, path)
    for pattern, targets in paths.items():
        if "*" in pattern:
            pre, _, post = pattern.partition("*")
            if not (spec.startswith(pre) and spec.endswith(post) and len(spec) >= len(pre) + len(post)):
                continue
            star = spec[len(pre):len(spec) - len(post)]
        elif spec != pattern:
            continue
        else:
            star = ""
        for t in targets:
            f = _ts_file(project, os.path.normpath(os.path.join(paths_dir, t.replace("*", star))))
            if f:
                return f
    if base_url:
        return _ts_file(project, os.path.normpath(os.path.join(base_url, spec)))
    return None


def resolve(project: ProjectFiles, path: str, nodes: list, text: str) -> list[Import]:
    out: list[Import] = []
    for node in nodes:
        src = node.child_by_field_name("source")
        if src is None:
            continue
        f = _ts_module(project, path, unquote(text_of(src)))
        if f is None:
            continue
        names: list[tuple[str, str]] = []
        alias, star = None, False
        if node.type == "import_statement":
            clause = next((c for c in node.children if c.type == "import_clause"), None)
            for c in clause.children if clause is not None else ():
                if c.type == "identifier":
                    names.append(("default", text_of(c)))
                elif c.type == "namespace_import":
                    ident = next((x for x in c.children if x.type == "identifier"), None)
                    alias = text_of(ident) if ident is not None else None
                elif c.type == "named_imports":
                    for s in c.named_children:
                        if s.type == "import_specifier":
                            n, a = s.child_by_field_name("name"), s.child_by_field_name("alias")
                            names.append((text_of(n), text_of(a) if a is not None else text_of(n)))
        else:   # export ... from
            clause = next((c for c in node.children if c.type == "export_clause"), None)
            if clause is None:
                star = True
                ns = next((c for c in node.children if c.type == "namespace_export"), None)
                if ns is not None:
                    star, alias = False, text_of(ns.named_children[-1]) if ns.named_children else None
            else:
                for s in clause.named_children:
                    n, a = s.child_by_field_name("name"), s.child_by_field_name("alias")
                    if n is not None:
                        names.append((text_of(n), text_of(a) if a is not None else text_of(n)))
        if names or alias or star:
            out.append(Import(f, names=tuple(names), alias=alias, star=star))
        else:
            out.append(Import(f, star=True))   # `import "./x"`: its definitions, by name only
    for m in REQUIRE.finditer(text):
        f = _ts_module(project, path, m.group(2))
        if f is None:
            continue
        target = m.group(1)
        if target.startswith("{"):
            names = [(p.split(":")[0].strip(), p.split(":")[-1].strip()) for p in target[1:-1].split(",")
                     if p.strip()]
            out.append(Import(f, names=tuple(names)))
        else:
            out.append(Import(f, alias=target))
    return out


def _jsonc(text: str) -> dict:
    """JSON with comments and trailing commas (tsconfig.json), or {}."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        else:
            out.append(c)
            i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    try:
        data = json.loads(cleaned)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
