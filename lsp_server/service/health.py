"""What `tandem doctor` prints and `tandem/health` answers: this install (version, Python, the llama.cpp build and
what `gpu` resolves to), the models and their checks, the shared engine process, this machine's speed, the
editors found, every setting in effect with where it came from, and the problems, each with what to do. Fast: it
loads no model (a model file is hashed once, then known by its size and time), starts no engine."""
from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from ..engine import registry
from ..engine.config import EngineKind, GpuMode
from ..engine.machine import LlamaBuild, llama_build, machine_speed
from .gate import MEANS
from .installed import editors_found
from .layers import DEFAULT, EDITOR, Layers, user_config, workspace_config

SPEED_PROBE_S = 0.3


@dataclass(frozen=True)
class Problem:
    what: str
    fix: str
    blocks: bool    # completion cannot work until it is fixed


def _gpu(build: LlamaBuild, mode: GpuMode) -> str:
    if mode == GpuMode.OFF:
        return "the CPU (gpu: off)"
    if build.gpu_offload:
        return f"the GPU ({build.gpu_backend or 'its backend unnamed'}), every layer of both models"
    return "the CPU (this llama.cpp build has no GPU backend)"


def _where(layers: Layers, name: str) -> str:
    origin = layers.origin(name)
    return {DEFAULT: "the default", EDITOR: "the editor's settings"}.get(origin, origin)


def _models(layers: Layers, problems: list[Problem]) -> list[dict]:
    """The model files these settings use, each checked as `tandem models list` checks it."""
    s = layers.effective()
    wanted = []   # (role, path, spec or None, blocks, the setting that names it)
    if s.backend:
        wanted.append(("vocabulary", s.backend_vocab or str(registry.default_path(registry.DEFAULT_TARGET)),
                       None if s.backend_vocab else registry.DEFAULT_TARGET, True, "backendVocab"))
    else:
        wanted.append(("target", s.target or str(registry.default_path(registry.DEFAULT_TARGET)),
                       None if s.target else registry.DEFAULT_TARGET, True, "target"))
        if s.draft != "none":
            wanted.append(("draft", s.draft or str(registry.default_path(registry.DEFAULT_DRAFT)),
                           None if s.draft else registry.DEFAULT_DRAFT, False, "draft"))
    out = []
    for role, path, spec, blocks, setting in wanted:
        state, detail = registry.model_state(path, spec)
        size = Path(path).stat().st_size if state != "missing" else None
        out.append({"role": role, "path": path, "state": state, "detail": detail, "bytes": size})
        if state == "ok":
            continue
        if spec is not None:
            fix = "run `tandem models pull" + (" --force`" if state == "broken" else "`")
        else:
            fix = f"check the file named by `{setting}` (set in {_where(layers, setting)})"
        effect = "completion is off" if blocks else "completions run target-only (slower)"
        problems.append(Problem(f"the {role} model {path} is {state}: {detail}; {effect}", fix, blocks))
    return out


def _engine(layers: Layers) -> dict:
    s = layers.effective()
    if s.backend:
        return {"where": "backend", "url": s.backend, "running": None}
    if s.engine == EngineKind.LOCAL:
        return {"where": "local", "running": None}
    from ..engine.shared.client import probe, socket_path
    cfg = s.engine_config()
    info = probe(cfg)
    return {"where": "shared", "socket": socket_path(cfg), "running": info is not None,
            "pid": info.get("pid") if info else None}


def report(layers: Layers, version: str) -> dict:
    """The report as data (`--json`, and `tandem/health` beside its text); `version` is the package's
    (`lsp_server.__version__`, which pyproject reads too)."""
    problems = [Problem(p, "fix the value in the file (or the editor's setting) it names; the other settings "
                           "apply meanwhile", True) for p in layers.problems()]
    problems += [Problem(n, "set them in your own config.toml or the editor's settings", False) for n in layers.notes]
    settings = layers.effective()
    with ThreadPoolExecutor(2) as pool:   # the editors' --version runs while the CPU is measured
        editors = pool.submit(editors_found)
        speed = machine_speed(SPEED_PROBE_S)
        build = llama_build()
        models = _models(layers, problems)
        engine = _engine(layers)
        found = editors.result()
    if not any(e.path for e in found):
        problems.append(Problem("no editor found on PATH (code, code-server, codium, nvim, hx)",
                                "install an editor's client: see the README", False))
    files = [user_config()] + ([workspace_config(layers.workspace_root)] if layers.workspace_root else [])
    used = {layer.origin for layer in layers.files}
    return {
        "version": version,
        "python": {"version": sys.version.split()[0], "executable": sys.executable},
        "llama_cpp": {"version": build.version, "cpu_features": list(build.cpu_features),
                      "gpu_offload": build.gpu_offload, "gpu_backend": build.gpu_backend,
                      "gpu": settings.gpu.value, "runs_on": _gpu(build, settings.gpu)},
        "models": {"cache": str(registry.models_dir()), "files": models},
        "engine": engine,
        "suggestions": {"level": settings.suggestions.value, "means": MEANS[settings.suggestions],
                        "gated": not settings.backend},
        "machine": speed,
        "editors": [e.as_dict() for e in found],
        "config_files": [{"path": str(p), "exists": p.is_file(), "used": str(p) in used} for p in files],
        "settings": [e.as_dict() for e in layers.entries()],
        "problems": [asdict(p) for p in problems],
        "ok": not any(p.blocks for p in problems),
    }


def _engine_line(e: dict) -> str:
    if e["where"] == "backend":
        return f"an inference server, {e['url']} (backend; not checked from here: the server says when it connects)"
    if e["where"] == "local":
        return "in each editor window's server (engine: local)"
    if e["running"]:
        return f"shared engine process running (pid {e['pid']}, {e['socket']})"
    return f"shared engine process not running (the first editor window starts it; {e['socket']})"


def render(r: dict) -> str:
    """The report as text, as `tandem doctor` prints it."""
    py, ll = r["python"], r["llama_cpp"]
    lines = [f"Tandem {r['version']}",
             f"  Python        {py['version']} ({py['executable']})",
             f"  llama.cpp     llama-cpp-python {ll['version']}; "
             f"CPU features: {' '.join(ll['cpu_features']) or 'none'}",
             f"  GPU offload   {'yes, ' + (ll['gpu_backend'] or 'backend unnamed') if ll['gpu_offload'] else 'no'};"
             f" gpu: {ll['gpu']} runs the models on {ll['runs_on']}",
             f"  machine       {r['machine']['cpu']}, {r['machine']['cores']} cores, {r['machine']['gflops']} GFLOPS "
             f"(float32 matrix products)",
             f"  engine        {_engine_line(r['engine'])}",
             f"  ghost text    suggestions: {r['suggestions']['level']}, " + (
                 r['suggestions']['means'] if r['suggestions']['gated']
                 else "every answer the model writes (an inference server gives no margins to judge by); places "
                      "unlikely to be taken are still not asked"),
             f"  models        {r['models']['cache']}"]
    for m in r["models"]["files"]:
        size = f"{m['bytes'] / 1e6:,.0f} MB" if m["bytes"] is not None else ""
        lines.append(f"    {m['role']:<10} {m['path']}  {size}  {m['detail']}")
    lines.append("  editors")
    for e in r["editors"]:
        if not e["path"]:
            lines.append(f"    {e['name']:<11} not on PATH")
            continue
        plugin = {True: "Tandem installed", False: f"Tandem not found ({e['where']})", None: ""}[e["tandem"]]
        lines.append(f"    {e['name']:<11} {e['version'] or '?'} ({e['path']}); {plugin}")
    lines.append("  config files (lowest first; the editor's settings come last)")
    for f in r["config_files"]:
        state = "used" if f["used"] else "has a problem (below)" if f["exists"] else "not there"
        lines.append(f"    {f['path']}  {state}")
    lines.append("  settings (value, origin)")
    width = max(len(s["key"]) for s in r["settings"])
    for s in r["settings"]:
        value = json.dumps(s["value"])
        lines.append(f"    {s['key']:<{width}}  {value:<24} {s['origin']}")
    if not r["problems"]:
        lines.append("\nNo problems found.")
    else:
        lines.append("\nProblems:")
        for p in r["problems"]:
            lines.append(f"  {'ERROR' if p['blocks'] else 'warning'}: {p['what']}\n    fix: {p['fix']}")
        if r["ok"]:
            lines.append("Nothing stops completion.")
    return "\n".join(lines)
