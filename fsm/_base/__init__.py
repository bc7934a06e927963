"""The bottom layer: what ``claimfsm.skills`` and ``claimfsm.state`` both need.

The frozen-model base and ``trusted`` construction (``models``), the one JSON encoder
(``json``), the error root and the stable error codes (``errors``, ``codes``: every
exception derives from ``ClaimFsmError``, every code is an ``ErrorCode``), the store
codes SQLite's own errors map to (``sqlite``: the session store and the evidence index
are both SQLite files), the reader of a SQLite file that writes nothing
(``sqlite_read``; what it sees of the files and how it notices a writer:
``sqlite_watch``), the lazy-export helper every package ``__init__`` uses (``lazy``) and
the base of the value classes whose methods are written once instead of generated per
class (``record``). Code that leans on pydantic's internals lives here, in one place. It
imports nothing of claimfsm; every other part may import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

if TYPE_CHECKING:
    from claimfsm._base.errors import BadInput, ClaimFsmError, ErrorCode
    from claimfsm._base.json import dumps
    from claimfsm._base.models import Frozen, trusted

__all__ = ["BadInput", "ClaimFsmError", "ErrorCode", "Frozen", "dumps", "lazy_exports", "trusted"]

__getattr__ = lazy_exports(__name__, {
    "BadInput": "claimfsm._base.errors",
    "ClaimFsmError": "claimfsm._base.errors",
    "ErrorCode": "claimfsm._base.errors",
    "dumps": "claimfsm._base.json",
    "Frozen": "claimfsm._base.models",
    "trusted": "claimfsm._base.models",
})
