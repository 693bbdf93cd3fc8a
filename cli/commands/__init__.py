"""The `kafka-wire` subcommands: each module here defines `register(subparsers)`.

A command module adds its own subparser and sets `func` to a callable taking the parsed args
and returning the exit status; `cli.main` discovers them all, so adding a tool is adding a
module.
"""

from __future__ import annotations

import importlib
import pkgutil


def register_all(subparsers) -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(subparsers)
