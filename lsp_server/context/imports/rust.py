"""Rust: `mod x;` (x.rs or x/mod.rs in the module's folder) and `use crate::a::b`, `use self::`, `use super::`,
`use <this crate's name>::` (src/a.rs, src/a/mod.rs, ...)."""
from __future__ import annotations

import os
import re

from ..files import ProjectFiles
from ..syntax import text_of
from .base import Import


def _crate(project: ProjectFiles, path: str) -> tuple[str | None, str]:
    """(the crate root's folder (src/), the crate's name as code names it)."""
    cargo = project.upward(os.path.dirname(path), ("Cargo.toml",))
    if cargo is None:
        return None, ""
    text = project.source(cargo) or ""
    m = re.search(r"^\[package\][^\[]*?^\s*name\s*=\s*\"([^\"]+)\"", text, re.M | re.S)
    return os.path.join(os.path.dirname(cargo), "src"), (m.group(1).replace("-", "_") if m else "")


def _rust_root_file(project: ProjectFiles, src: str, path: str) -> str | None:
    if os.path.dirname(path) == src and os.path.basename(path) in ("main.rs", "lib.rs"):
        return path
    return project.found(os.path.join(src, "lib.rs")) or project.found(os.path.join(src, "main.rs"))


def _rust_module_of(path: str) -> tuple[str, str]:
    """(file, folder of its submodules) of the module a file is."""
    if os.path.basename(path) in ("main.rs", "lib.rs", "mod.rs"):
        return path, os.path.dirname(path)
    return path, os.path.splitext(path)[0]


def _rust_child(project: ProjectFiles, module: tuple[str, str], name: str) -> tuple[str, str] | None:
    folder = module[1]
    f = project.found(os.path.join(folder, name + ".rs"))
    if f:
        return f, os.path.join(folder, name)
    f = project.found(os.path.join(folder, name, "mod.rs"))
    return (f, os.path.join(folder, name)) if f else None


def _rust_parent(project: ProjectFiles, module: tuple[str, str], src: str | None, path: str) -> tuple[str, str] | None:
    parent = os.path.dirname(module[1])
    if src is not None and os.path.normpath(parent) == os.path.normpath(src):
        root = _rust_root_file(project, src, path)
        return (root, src) if root else None
    f = project.found(parent + ".rs") or project.found(os.path.join(parent, "mod.rs"))
    return (f, parent) if f else None


def resolve(project: ProjectFiles, path: str, nodes: list, text: str) -> list[Import]:
    out: list[Import] = []
    src, crate_name = _crate(project, path)
    here = _rust_module_of(path)
    local_mods = set()
    for node in nodes:
        if node.type == "mod_item" and node.child_by_field_name("body") is None:
            name = text_of(node.child_by_field_name("name"))
            child = _rust_child(project, here, name)
            local_mods.add(name)
            if child:
                out.append(Import(child[0], alias=name))
    for node in nodes:
        if node.type != "use_declaration":
            continue
        arg = node.child_by_field_name("argument")
        for segs, alias, glob in _use_paths(arg, []) if arg is not None else []:
            if not segs:
                continue
            first = segs[0]
            if first == "crate" or (crate_name and first == crate_name):
                root = _rust_root_file(project, src, path) if src else None
                if root is None:
                    continue
                module, rest = (root, src), segs[1:]
            elif first == "self":
                module, rest = here, segs[1:]
            elif first == "super":
                module, rest = here, segs
                while rest and rest[0] == "super" and module is not None:
                    module = _rust_parent(project, module, src, path)
                    rest = rest[1:]
                if module is None:
                    continue
            elif first in local_mods:
                module, rest = here, segs
            else:
                continue   # another crate
            item = None
            for seg in rest:
                if seg == "self":
                    break
                child = _rust_child(project, module, seg)
                if child is None:
                    item = seg
                    break
                module = child
            if item is not None:
                out.append(Import(module[0], names=((item, alias or item),)))
            elif glob:
                out.append(Import(module[0], star=True))
            elif module[0] != path:
                last = [s for s in segs if s != "self"][-1]
                out.append(Import(module[0], alias=alias or last))
    return out


def _path_segments(node) -> list[str]:
    if node is None:
        return []
    if node.type == "scoped_identifier":
        return _path_segments(node.child_by_field_name("path")) + [text_of(node.child_by_field_name("name"))]
    return [text_of(node)]


def _use_paths(node, prefix: list[str]) -> list[tuple[list[str], str | None, bool]]:
    """The paths a use declaration's argument names: (segments, alias, glob)."""
    t = node.type
    if t in ("identifier", "crate", "self", "super", "scoped_identifier"):
        return [(prefix + _path_segments(node), None, False)]
    if t == "use_as_clause":
        return [(prefix + _path_segments(node.child_by_field_name("path")),
                 text_of(node.child_by_field_name("alias")), False)]
    if t == "scoped_use_list":
        base = prefix + _path_segments(node.child_by_field_name("path"))
        lst = node.child_by_field_name("list")
        return _use_paths(lst, base) if lst is not None else []
    if t == "use_list":
        out = []
        for c in node.named_children:
            out += _use_paths(c, prefix)
        return out
    if t == "use_wildcard":
        inner = next((c for c in node.named_children), None)
        return [(prefix + _path_segments(inner), None, True)]
    return []
