"""Lazy re-exports for package ``__init__`` modules (PEP 562).

A package's public names load on first use: importing any ``claimfsm.X`` runs every
parent package's ``__init__`` first, and a command that touches one module must not pay
for the whole package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``name`` from ``where[name]`` on first use.

    ``where`` maps each public name to the absolute module that defines it. The value is
    cached in the package's namespace, so the lookup runs once per name.
    """
    table = dict(where)

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
