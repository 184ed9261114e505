"""Where each setting in effect comes from. Layers, lowest first: the built-in defaults (settings.py), the user's
config.toml, the workspace's tandem.toml, the editor's values. Editors send only what their user set, and each
workspace/didChangeConfiguration replaces the editor's layer wholesale, so a key the editor stops sending falls
back to the files' value or the default. A value that does not check out is refused alone, and said so (which
layer, which setting); the rest of its layer still applies. A workspace's tandem.toml comes with a repository
someone cloned: it may only narrow what the user allows (`_narrowed`), and never set where code goes or which
model files load (Settings.USER_ONLY)."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .gate import Suggestions
from .settings import CLIENT_KEYS, Settings, SettingsError, _snake, camel, plain

DEFAULT = "default"
EDITOR = "editor"


def user_config() -> Path:
    """$XDG_CONFIG_HOME/tandem/config.toml, else ~/.config/tandem/config.toml."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "tandem" / "config.toml"


def workspace_config(root: str) -> Path:
    return Path(root) / "tandem.toml"


@dataclass(frozen=True)
class Layer:
    origin: str     # a file's path, or EDITOR
    values: dict    # key -> value, as written (camelCase or snake_case); the editors' own keys left out
    workspace: bool = False   # a workspace's tandem.toml, which came with the repository


@dataclass(frozen=True)
class Effective:
    key: str        # camelCase, as the editors and the files write it
    value: object   # as JSON writes it
    origin: str     # DEFAULT, a file's path, or EDITOR

    def as_dict(self) -> dict:
        return {"key": self.key, "value": self.value, "origin": self.origin}


def _normalised(values, origin: str) -> dict:
    if values in ([], None):   # an empty section may come as [] (Lua) or null
        return {}
    if not isinstance(values, dict):
        raise SettingsError(f"{origin}: settings must be an object, not {type(values).__name__}")
    return {k: v for k, v in values.items() if _snake(k) not in CLIENT_KEYS}


def read_file(path: Path, workspace: bool, warn) -> Layer:
    """One config file's layer (SettingsError where it cannot be read). A workspace's file comes with the
    repository someone cloned: the settings it may not set (Settings.USER_ONLY) are left out, and `warn` says so."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SettingsError(f"{path}: {e}") from e
    section = data.get("tandem", data)
    values = _normalised(section, str(path))
    refused = sorted(k for k in values if _snake(k) in Settings.USER_ONLY)
    if workspace and refused:
        warn(f"{path}: {', '.join(refused)} ignored: a workspace's tandem.toml comes with the repository, so it may "
             f"not choose where your code is sent or which model files are loaded; set them in {user_config()} or "
             f"in your editor's settings")
        values = {k: v for k, v in values.items() if _snake(k) not in Settings.USER_ONLY}
    return Layer(str(path), values, workspace)


@dataclass
class Layers:
    files: list[Layer] = field(default_factory=list)   # the user's config.toml, then the workspace's tandem.toml
    editor: Layer = field(default_factory=lambda: Layer(EDITOR, {}))
    file_problems: list[str] = field(default_factory=list)   # files that could not be read
    notes: list[str] = field(default_factory=list)           # what a workspace file was not allowed to set
    workspace_root: str | None = None

    @classmethod
    def load(cls, workspace_root: str | None, warn=lambda msg: None, trusted: bool = True) -> "Layers":
        """The config files that exist, read; a file that cannot be read is a problem, the others still apply. Not
        `trusted` (the editor says the user has not trusted the workspace): its tandem.toml is not read."""
        layers = cls(workspace_root=workspace_root)

        def note(msg: str) -> None:
            layers.notes.append(msg)
            warn(msg)

        wanted = [(user_config(), False)]
        if workspace_root and trusted:
            wanted.append((workspace_config(workspace_root), True))
        elif workspace_root and workspace_config(workspace_root).is_file():
            note(f"{workspace_config(workspace_root)} not read: the editor says this workspace is not trusted")
        for path, workspace in wanted:
            if not path.is_file():
                continue
            try:
                layer = read_file(path, workspace, note)
            except SettingsError as e:
                layers.file_problems.append(str(e))
                continue
            if workspace:   # what the user's own file allows, which the workspace's may only narrow
                below = Settings().merged_each(layers.files[0].values if layers.files else {})[0]
                layer = replace(layer, values=_narrowed(below, layer.values, lambda key, why: note(
                    f"{path}: {key} {why}")))
            layers.files.append(layer)
        return layers

    def with_editor(self, values) -> "Layers":
        """These layers with the editor's replaced by `values` (only the settings the user set there). A value that
        does not check out is refused alone (`problems`, naming the setting and the layer); SettingsError only
        where `values` is not a set of settings at all, and then these layers stay as they were."""
        return replace(self, editor=Layer(EDITOR, _normalised(values, "editor settings")))

    def _resolve(self, editor: Layer | None = None) -> tuple[Settings, dict[str, str], list[str]]:
        """The settings in effect, the origin of each setting set, and the values refused (each alone, the others
        of its layer still applying). What a workspace's file excludes stays excluded whatever a layer above it
        lists."""
        settings, origins, problems = Settings(), {}, list(self.file_problems)
        excluded: tuple[str, ...] = ()
        for layer in self.files + ([editor] if editor is not None else []):
            settings, applied, refused = settings.merged_each(layer.values)
            name = "editor settings" if layer.origin == EDITOR else layer.origin
            problems += [f"{name}: {why}; that setting is not applied" for why in refused.values()]
            origins.update(dict.fromkeys(map(_snake, applied), layer.origin))
            if layer.workspace:
                excluded = settings.exclude
        if excluded:
            settings = replace(settings, exclude=tuple(dict.fromkeys(settings.exclude + excluded)))
        return settings, origins, problems

    def effective(self) -> Settings:
        return self._resolve(self.editor)[0]

    def problems(self) -> list[str]:
        """The files that could not be read and the values refused, each naming its setting and layer."""
        return self._resolve(self.editor)[2]

    def origin(self, name: str) -> str:
        return self._resolve(self.editor)[1].get(_snake(name), DEFAULT)

    def entries(self) -> list[Effective]:
        """Every setting in effect, its value and where it came from, in the order Settings declares them."""
        settings, origins, _ = self._resolve(self.editor)
        return [Effective(camel(f.name), plain(getattr(settings, f.name)), origins.get(f.name, DEFAULT))
                for f in fields(settings)]


# the settings a workspace's file may only lower: the memory, cores, files and time the engine takes from the user
QUIETER = (Suggestions.EAGER, Suggestions.BALANCED, Suggestions.QUIET)   # a workspace may only move right
LOWER_ONLY = ("context_size", "threads", "kv_store_mib", "engine_idle_minutes", "max_file_bytes")


def _narrowed(below: Settings, values: dict, refuse) -> dict:
    """A workspace file's values that only narrow what `below` allows: its exclude adds to the list below; it may
    turn completion off, for a language or whole, not on where it is off below; it may make suggestions quieter,
    not louder; it may lower a LOWER_ONLY setting,
    not raise it (threads 0 is every core; a KV store of -1 is sized automatically, which a workspace may only turn
    off). `refuse(key, why)` hears of each value left out."""
    out = {}
    for key, value in values.items():
        name = _snake(key)
        try:
            value = below.coerced(key, value)
        except SettingsError:
            out[key] = value    # merged_each refuses it, saying why
            continue
        if name == "exclude":
            value = tuple(dict.fromkeys(below.exclude + value))
        elif name == "languages":
            widened = sorted(k for k, on in value.items() if on and not below.language_enabled(k))
            if widened:
                refuse(key, f"turns on {', '.join(widened)}, which your settings turn off: a workspace may only "
                            f"turn languages off")
            value = {**below.languages, **{k: on for k, on in value.items() if k not in widened}}
        elif name == "enabled" and value and not below.enabled:
            refuse(key, "ignored: completion is off in your settings, and a workspace may not turn it on")
            continue
        elif name == "suggestions" and QUIETER.index(value) < QUIETER.index(below.suggestions):
            refuse(key, f"{value} ignored: a workspace's tandem.toml may only make suggestions quieter (they are "
                        f"{below.suggestions} below it)")
            continue
        elif name in LOWER_ONLY and _raises(name, getattr(below, name), value):
            refuse(key, f"{value} ignored: a workspace's tandem.toml may only lower it (it is "
                        f"{getattr(below, name)} below it)")
            continue
        out[key] = value
    return out


def _raises(name: str, below: int, value: int) -> bool:
    if name == "threads":
        return below != 0 and (value == 0 or value > below)
    if name == "kv_store_mib":
        if value == 0:
            return False
        if below == -1:
            return value != -1
        return below == 0 or value == -1 or value > below
    return value > below
