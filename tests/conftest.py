import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def tree_depth(tree) -> int:
    """The deepest node's depth in a syntax tree (walked with a stack: the trees measured are deeper than Python's
    recursion limit)."""
    deepest, stack = 0, [(tree.root_node, 0)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in node.children)
    return deepest


@pytest.fixture(scope="session", autouse=True)
def engine_runtime():
    """The shared engine processes that the tests' servers start live in a folder of this session's and are
    stopped at its end (a user's exits after engineIdleMinutes without a window), as a benchmark's do."""
    from evals.common.own_engine import own_engine
    with own_engine() as folder:
        yield Path(folder)


@pytest.fixture(scope="session")
def engine():
    """The real default pair, loaded once for the whole session (as the server keeps it warm)."""
    from lsp_server.engine import DraftResidency, EngineConfig, LocalEngine
    e = LocalEngine(EngineConfig(stats_path="", draft_resident=DraftResidency.ALWAYS))
    yield e
    e.close()


@pytest.fixture(scope="session")
def pipeline(engine):
    """The server's pipeline: its prompt budgets and fast prompts from the default settings, as an editor gets."""
    from lsp_server.pipeline import Pipeline
    from lsp_server.service.settings import Settings
    return Pipeline(engine, Settings().prompt_budget(), Settings().fast_prefix_tokens)


def pytest_collection_modifyitems(config, items):
    """A test that takes the real models through a fixture carries the `models` marker (make check leaves it)."""
    for item in items:
        if {"engine", "pipeline"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.models)


def tandem_cmd():
    return [sys.executable, "-m", "lsp_server.cli.main"]


def eval_cmd():
    return [sys.executable, "-m", "evals.cli"]
