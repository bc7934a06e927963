"""``[sources.NAME]`` of the config file: the sources answered by HTTP backends.

Read from the same file as the profile (``claimfsm.toml`` in the working directory, or
``[tool.claimfsm]`` of ``pyproject.toml``) and validated there: a bad table is a
``BAD_CONFIG`` :class:`~claimfsm.engine.profile.ProfileError` naming the dotted key.
"""

from __future__ import annotations

from pathlib import Path

from claimfsm._base.errors import BadInput
from claimfsm.engine.profile import ProfileError, find_config
from claimfsm.skills.tools.http.config import SourceConfig, parse_sources

__all__ = ["find_sources"]


def find_sources(cwd: Path | None = None) -> dict[str, SourceConfig]:
    """The configured sources of ``cwd``'s config file (none: ``{}``)."""
    found = find_config(cwd or Path.cwd())
    if found is None or "sources" not in found[1]:
        return {}
    path, table = found
    try:
        return parse_sources(table["sources"])
    except BadInput as exc:
        raise ProfileError(f"{path.name}: {exc.msg}", code="BAD_CONFIG",
                           field=exc.field) from None
