"""The bottom layer: what ``claimfsm.skills`` and ``claimfsm.state`` both need.

The frozen-model base and ``trusted`` construction, JSON dumps, the error root and the
stable error codes (``ErrorCode``), the store codes SQLite's own errors map to (the
session store and the evidence index are both SQLite files), and the lazy-export helper
every package ``__init__`` uses. It imports nothing of claimfsm; everything else may
import it.
"""

from claimfsm._base.errors import BadInput, ClaimFsmError, ErrorCode
from claimfsm._base.lazy import lazy_exports

__all__ = ["BadInput", "ClaimFsmError", "ErrorCode", "lazy_exports"]
