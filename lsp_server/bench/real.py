"""`tandem eval real` (being written)."""
from __future__ import annotations


def add_arguments(parser) -> None:
    """This suite's own options of `tandem eval` (prefixed --real-...)."""


def cli_main(args, load_engine, die) -> None:
    die("tandem eval real: not built yet")
