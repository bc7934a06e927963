"""Media types as RFC 9110 spells them: ``type/subtype`` compared case-insensitively and
exactly (``APPLICATION/JSON`` is JSON, ``application/jsonx`` is not), parameters after
``;`` split off, a ``charset`` other than UTF-8 refused for JSON."""

from __future__ import annotations

__all__ = ["JSON_TYPE", "MULTIPART", "media_type"]

JSON_TYPE = "application/json"
MULTIPART = "multipart/form-data"


def media_type(header: str | None) -> tuple[str, dict[str, str]]:
    """The lower-cased ``type/subtype`` of a Content-Type header (``""`` when absent or
    malformed) and its parameters (names lower-cased, quotes taken off the values)."""
    if not header:
        return "", {}
    kind, *rest = header.split(";")
    kind = kind.strip().lower()
    main, slash, sub = kind.partition("/")
    if not slash or not main or not sub or any(c.isspace() for c in kind):
        return "", {}
    params: dict[str, str] = {}
    for part in rest:
        name, eq, value = part.partition("=")
        if eq:
            params[name.strip().lower()] = value.strip().strip('"')
    return kind, params
