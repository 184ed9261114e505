"""Where each setting in effect comes from. Layers, lowest first: the built-in defaults (settings.py), the user's
config.toml, the workspace's tandem.toml, the editor's values. Editors send only what their user set, and each
workspace/didChangeConfiguration replaces the editor's layer wholesale, so a key the editor stops sending falls
back to the files' value or the default. A layer that does not check out is left out whole, and said so (which
layer, which key); the layers below it still apply."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

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
    return Layer(str(path), values)


@dataclass
class Layers:
    files: list[Layer] = field(default_factory=list)   # the user's config.toml, then the workspace's tandem.toml
    editor: Layer = field(default_factory=lambda: Layer(EDITOR, {}))
    file_problems: list[str] = field(default_factory=list)   # files that could not be read
    notes: list[str] = field(default_factory=list)           # what a workspace file was not allowed to set
    workspace_root: str | None = None

    @classmethod
    def load(cls, workspace_root: str | None, warn=lambda msg: None) -> "Layers":
        """The config files that exist, read; a file that cannot be read is a problem, the others still apply."""
        layers = cls(workspace_root=workspace_root)

        def note(msg: str) -> None:
            layers.notes.append(msg)
            warn(msg)

        wanted = [(user_config(), False)]
        if workspace_root:
            wanted.append((workspace_config(workspace_root), True))
        for path, workspace in wanted:
            if not path.is_file():
                continue
            try:
                layers.files.append(read_file(path, workspace, note))
            except SettingsError as e:
                layers.file_problems.append(str(e))
        return layers

    def with_editor(self, values) -> "Layers":
        """These layers with the editor's replaced by `values` (only the settings the user set there). SettingsError,
        naming the key, where they do not check out on the layers below; these layers stay as they were."""
        editor = Layer(EDITOR, _normalised(values, "editor settings"))
        self._apply(self._base(), editor)
        return replace(self, editor=editor)

    def _base(self) -> Settings:
        return self._resolve()[0]

    @staticmethod
    def _apply(settings: Settings, layer: Layer) -> Settings:
        try:
            return settings.merged(layer.values)
        except SettingsError as e:
            raise SettingsError(f"{'editor settings' if layer.origin == EDITOR else layer.origin}: {e}") from None

    def _resolve(self, editor: Layer | None = None) -> tuple[Settings, dict[str, str], list[str]]:
        """The settings of the layers that check out, the origin of each setting set, and the layers left out."""
        settings, origins, problems = Settings(), {}, list(self.file_problems)
        for layer in self.files + ([editor] if editor is not None else []):
            try:
                settings = self._apply(settings, layer)
            except SettingsError as e:
                problems.append(f"{e}; the settings there are not applied")
                continue
            origins.update(dict.fromkeys(map(_snake, layer.values), layer.origin))
        return settings, origins, problems

    def effective(self) -> Settings:
        return self._resolve(self.editor)[0]

    def problems(self) -> list[str]:
        """The layers left out, and why."""
        return self._resolve(self.editor)[2]

    def origin(self, name: str) -> str:
        return self._resolve(self.editor)[1].get(_snake(name), DEFAULT)

    def entries(self) -> list[Effective]:
        """Every setting in effect, its value and where it came from, in the order Settings declares them."""
        settings, origins, _ = self._resolve(self.editor)
        return [Effective(camel(f.name), plain(getattr(settings, f.name)), origins.get(f.name, DEFAULT))
                for f in fields(settings)]
