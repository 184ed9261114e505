"""initialize / initialized / configuration: the settings' layers (service/layers.py: defaults, config.toml, the
workspace's tandem.toml, the editor's values from initializationOptions, then each
workspace/didChangeConfiguration); the models load in the background with $/progress reports."""
from __future__ import annotations

import asyncio
import uuid

from lsprotocol import types
from pygls.uris import to_fs_path

from ..service.layers import Layers
from ..service.settings import Settings, SettingsError
from ..service.stats import Stage
from .documents import recheck
from .lines import use_lsp_lines
from .server import TandemServer, log


def _tandem_section(values):
    """Clients send {"tandem": {...}} or the section itself; an empty section may come as [] (Lua)."""
    if isinstance(values, dict) and "tandem" in values:
        section = values["tandem"]
        return {} if section in ([], None) else section
    return {} if values in ([], None) else values


def register(server: TandemServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TandemServer, params: types.InitializeParams):
        use_lsp_lines(ls.workspace)
        root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
        ls.workspace_root = to_fs_path(root) if root else params.root_path
        options = _tandem_section(params.initialization_options)
        trusted = not (isinstance(options, dict) and options.get("workspaceTrusted") is False)
        layers = Layers.load(ls.workspace_root, warn=lambda msg: ls.message(types.MessageType.Warning, msg),
                             trusted=trusted)
        try:
            layers = layers.with_editor(options)
        except SettingsError as e:
            ls.message(types.MessageType.Error, f"initializationOptions ignored: {e}")
        for problem in layers.problems():
            ls.message(types.MessageType.Error, f"setting ignored: {problem}")
        ls.layers, ls.settings = layers, layers.effective()

    @server.feature(types.INITIALIZED)
    def initialized(ls: TandemServer, params: types.InitializedParams):
        ls.load_task = ls.service.tasks.spawn(load_models(ls, ls.settings), "loading the models")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: TandemServer, params: types.DidChangeConfigurationParams):
        # the section holds every setting the user set in the editor: it replaces the editor's layer
        try:
            layers = ls.layers.with_editor(_tandem_section(params.settings))
        except SettingsError as e:
            ls.message(types.MessageType.Error, f"configuration change ignored: {e}")
            return
        for problem in set(layers.problems()) - set(ls.layers.problems()):   # said once, not at every change
            ls.message(types.MessageType.Error, f"setting ignored: {problem}")
        new = layers.effective()
        old, ls.layers, ls.settings = ls.settings, layers, new
        if new.exclude != old.exclude:
            recheck(ls)
        if ls.load_task is not None and not ls.load_task.done():
            # every client sends its configuration right after `initialized`, while the models load: the load
            # takes the newest settings when it ends (and loads again only if they name other models)
            ls.log_message("configuration taken; it applies when the models are loaded")
            return
        if new.models_differ(old) or not ls.service.ready:
            ls.load_task = ls.service.tasks.spawn(load_models(ls, new), "loading the models")
        else:
            ls.service.apply(new)
            if new.enabled != old.enabled:
                ls.push_status("ready")
        ls.log_message("configuration applied")

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TandemServer, *args):
        ls.service.cancel_all()


async def load_models(ls: TandemServer, settings: Settings) -> None:
    loop = asyncio.get_running_loop()
    ls.push_status("loading")
    token = None
    caps = ls.client_capabilities.window
    if caps is not None and caps.work_done_progress:
        token = f"tandem-load-{uuid.uuid4().hex[:8]}"
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title="Tandem", message="loading models", cancellable=False))
        except Exception as e:   # a client that refuses progress still gets its models
            ls.service.stats.failed(Stage.PROGRESS, e, log, "the load's $/progress")
            token = None

    def progress(msg: str) -> None:   # called on the model thread
        if token is not None:
            loop.call_soon_threadsafe(ls.work_done_progress.report, token,
                                      types.WorkDoneProgressReport(message=msg.strip()))
        loop.call_soon_threadsafe(ls.log_message, msg.strip())

    error = await ls.service.load(settings, progress)
    latest = ls.settings
    if latest is not settings and latest.models_differ(settings):
        # the configuration changed the models while they loaded: load those instead (one report, one message)
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="reloading"))
        ls.log_message("the configuration changed the models while they loaded: loading again")
        await load_models(ls, latest)
        return
    if latest is not settings and error is None:
        ls.service.apply(latest)
    if token is not None:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
            message="ready" if error is None else "failed"))
    ls.push_status("ready" if error is None else "error", "" if error is None else str(error))
    if error is not None:
        ls.message(types.MessageType.Error, f"models could not be loaded, completions are off: {error}")
    else:
        for w in ls.service.warnings():
            ls.message(types.MessageType.Warning, w)
        ls.log_message("models ready")
