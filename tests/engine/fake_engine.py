"""A stand-in for `tandem engine` that loads no model (tests/engine/test_engine_versions.py): the real host
(host.py) in front of an engine that holds nothing, started with the same arguments. $TANDEM_FAKE_VERSION is the
version it says it is ("none": it says no version and no configuration, as engines did before 0.3)."""
import argparse
import asyncio
import json
import os
from types import SimpleNamespace

import lsp_server
from lsp_server.engine import EngineConfig
from lsp_server.engine.shared import identity
from lsp_server.engine.shared.host import EngineHost


class Nothing:
    """What the host asks of its engine for `info`, `summary` and `notices`."""

    def __init__(self, cfg: EngineConfig):
        self.cfg, self.draft, self.warnings = cfg, None, []
        self.target = SimpleNamespace(path=cfg.target_path, counters=SimpleNamespace())
        self.draft_decision, self.prompt_tok_s = "no draft model", 100.0

    def loaded(self) -> str:
        return "no model (a stand-in)"

    def store_summary(self) -> dict:
        return {}

    def notices(self) -> list[str]:
        return []


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--socket", required=True)
    p.add_argument("--idle-exit", type=float, default=60.0)
    p.add_argument("--config", required=True)
    args = p.parse_args()
    cfg = EngineConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(args.config).items()})
    said = os.environ.get("TANDEM_FAKE_VERSION")
    if said:
        lsp_server.__version__ = said   # the package of another version, as far as anything asks
    ident = {} if said == "none" else identity.of(cfg)
    asyncio.run(EngineHost(Nothing(cfg), args.socket, args.idle_exit, ident=ident).run())


if __name__ == "__main__":
    main()
