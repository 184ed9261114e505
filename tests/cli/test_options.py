"""The CLI's engine options default to what the server's settings do: both read the engine's defaults."""
from lsp_server.cli.main import build_parser
from lsp_server.cli.options import backend_config, engine_config
from lsp_server.service.settings import Settings


def test_the_cli_defaults_are_the_settings_defaults():
    parser = build_parser()
    args = parser.parse_args(["complete", "x.py", "--line", "1", "--col", "1", "--backend", "http://h:1"])
    s = Settings().merged({"backend": "http://h:1"})
    assert engine_config(args) == s.engine_config()
    assert backend_config(args) == s.backend_config()
    engine = parser.parse_args(["engine", "--socket", "x"])
    assert engine.idle_exit == s.engine_idle_minutes * 60
