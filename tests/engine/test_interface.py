"""The three engines implement the Engine protocol the service, the pipeline and the CLI type against: every
member it names, methods with the protocol's parameters (an implementation may add optional ones)."""
import ast
import inspect
import textwrap
import typing

import pytest

from lsp_server.engine import Engine, LocalEngine
from lsp_server.engine.interface import TargetModel
from lsp_server.engine.llama import LlamaModel
from lsp_server.engine.remote import RemoteEngine, RemoteModel
from lsp_server.engine.shared import SharedEngine
from lsp_server.engine.shared.client import SharedModel


def _members(protocol) -> tuple[set[str], dict[str, inspect.Signature]]:
    attributes = set(typing.get_type_hints(protocol))
    methods = {name: inspect.signature(fn) for name, fn in vars(protocol).items()
               if inspect.isfunction(fn) and not name.startswith("_")}
    return attributes, methods


def _attributes(cls) -> set[str]:
    """The attributes the class's methods (or a base's) assign on self (__init__ or what it calls: the instances
    cannot be made here, they need models or a server), and its properties and class attributes."""
    out = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        out |= {name for name, v in vars(klass).items() if not callable(v) or isinstance(v, property)}
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(klass)))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
                        out.add(e.attr)
    return out


def _compatible(want: inspect.Signature, got: inspect.Signature) -> bool:
    have = dict(got.parameters)
    for name, p in want.parameters.items():
        q = have.pop(name, None)
        if q is None or q.kind != p.kind or q.default != p.default:
            return False
    return all(q.default is not inspect.Parameter.empty or q.kind in (q.VAR_POSITIONAL, q.VAR_KEYWORD)
               for q in have.values())


@pytest.mark.parametrize("protocol, cls", [(Engine, LocalEngine), (Engine, RemoteEngine), (Engine, SharedEngine),
                                           (TargetModel, LlamaModel), (TargetModel, RemoteModel),
                                           (TargetModel, SharedModel)])
def test_each_engine_implements_the_protocol(protocol, cls):
    attributes, methods = _members(protocol)
    assert attributes and methods or protocol is TargetModel
    missing = attributes - _attributes(cls)
    assert not missing, f"{cls.__name__} lacks {sorted(missing)}"
    for name, want in methods.items():
        fn = getattr(cls, name, None)
        assert callable(fn), f"{cls.__name__} lacks {name}()"
        got = inspect.signature(fn)
        assert _compatible(want, got), f"{cls.__name__}.{name}{got}: the protocol says {want}"


def test_a_check_that_would_catch_a_missing_member():
    class Partial:
        def __init__(self):
            self.cfg = None

        def tokenize(self, text, special=False):
            return []

        def cached(self, prefix):
            return 0

    assert _attributes(Partial) >= {"cfg"} and "target" not in _attributes(Partial)
    _, methods = _members(Engine)
    assert _compatible(methods["tokenize"], inspect.signature(Partial.tokenize))
    assert not _compatible(methods["cached"], inspect.signature(Partial.cached))
