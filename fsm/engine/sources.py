"""``[sources.NAME]`` of the config file: the sources answered by HTTP backends.

Read from the same file as the profile (``claimfsm.toml`` in the working directory, or
``[tool.claimfsm]`` of ``pyproject.toml``) and validated there: a bad table is a
``BAD_CONFIG`` :class:`~claimfsm.engine.profile.ProfileError` naming the dotted key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from claimfsm._base.errors import BadInput
from claimfsm._base.record import Record
from claimfsm.engine.profile import CONFIG_FILE, ProfileError, find_config
from claimfsm.skills.tools.http.config import SourceConfig, parse_sources

__all__ = ["SourceSet", "find_sources"]


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class SourceSet(Record, frozen=True):
    """Resolved ``[sources]`` as a frozen value, for ``batch`` workers: it pickles to Ray
    as it is and keys a worker's engines. Credentials stay what the table holds, the
    names of environment variables (``auth_env``): each worker reads their values from
    its own environment when it opens its engine (:meth:`configs` checks them there)."""

    text: bytes

    def __init__(self, text: bytes) -> None:
        self._fill(text=text)

    @classmethod
    def of(cls, sources: Mapping[str, SourceConfig] | None) -> SourceSet | None:
        """The set of ``sources`` (``None`` for none)."""
        if not sources:
            return None
        table = {name: config.model_dump(mode="json", exclude_defaults=True)
                 for name, config in sorted(sources.items())}
        return cls(orjson.dumps(table, option=orjson.OPT_SORT_KEYS))

    def configs(self) -> dict[str, SourceConfig]:
        """The configs again, checked where this runs (``BAD_CONFIG`` naming the field)."""
        return parse_sources(orjson.loads(self.text))


def _mentions(path: Path) -> bool:
    try:
        return b"sources" in path.read_bytes()
    except OSError:
        return False


def find_sources(cwd: Path | None = None) -> dict[str, SourceConfig]:
    """The configured sources of ``cwd``'s config file (none: ``{}``)."""
    base = cwd or Path.cwd()
    # Every command that runs a step asks; most run where no file names sources. A look at
    # the bytes spares them the TOML parser (a command's start-up is measured).
    if not any(_mentions(base / name) for name in (CONFIG_FILE, "pyproject.toml")):
        return {}
    found = find_config(base)
    if found is None or "sources" not in found[1]:
        return {}
    path, table = found
    try:
        return parse_sources(table["sources"])
    except BadInput as exc:
        raise ProfileError(f"{path.name}: {exc.msg}", code="BAD_CONFIG",
                           field=exc.field) from None
