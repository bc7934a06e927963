"""The HTTP API's query strings and path numbers as models, validated as strictly as the
bodies: a number is whole digits within its bounds (``3.0``, ``true``, ``1e3`` and
anything past the store's 64-bit integers are a 422 naming the parameter, never a 500),
a filter's value is one of those the filter knows (``verdict=MAYBE`` is a 422, not an
empty list). The same models give the OpenAPI document its parameters."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from annotated_types import Ge, Le
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from starlette.requests import Request

from claimfsm.engine.errors import BadInput
from claimfsm.engine.views import MAX_HISTORY_PAGE
from claimfsm.state.catalog import MAX_PAGE

__all__ = ["MAX_INT", "CompareQuery", "DiffQuery", "HeadQuery", "HistoryQuery", "Query",
           "RevisionPath", "SessionsQuery", "VerdictFilter", "bad_input", "query_model", "whole"]

#: The largest revision number, sequence or offset a store keeps (SQLite's and
#: PostgreSQL's 64-bit integers): a larger one is out of range, a 422.
MAX_INT = (1 << 63) - 1
_WHOLE = re.compile(r"-?[0-9]{1,19}")

M = TypeVar("M", bound=BaseModel)
VerdictFilter = Literal["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED", "none"]


def whole(value: Any) -> Any:
    """A query string's digits as an int; any other text is refused (``3.0``, ``1e3``,
    ``true``, or more digits than a 64-bit integer has)."""
    if isinstance(value, str):
        if not _WHOLE.fullmatch(value):
            raise ValueError("not a whole number within the 64-bit range")
        return int(value)
    return value


QueryInt = Annotated[int, BeforeValidator(whole)]
# The bounds before the parser: so they stay the integer's (minimum, maximum) in the
# schema also inside an optional.
Rev = Annotated[int, Ge(0), Le(MAX_INT), BeforeValidator(whole)]


class Query(BaseModel):
    """A query string's parameters (unknown ones are ignored, as browsers add some)."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class SessionsQuery(Query):
    """``GET /api/v1/sessions`` and the sessions page."""

    q: str | None = Field(default=None, max_length=1000,
                          description="claim text contains (case-insensitive)")
    fsm: str | None = Field(default=None, max_length=64, description="state is")
    verdict: VerdictFilter | None = Field(default=None,
                                          description="verdict is (none: no verdict)")
    version: str | None = Field(default=None, max_length=200, description=(
        "machine version is (unknown: older than versions)"))
    status: Literal["WAITING"] | None = Field(
        default=None, description="WAITING: only sessions waiting for a person")
    limit: QueryInt = Field(default=50, ge=1, le=MAX_PAGE, description="page size")
    before: Rev | None = Field(default=None, description="the previous page's `next`")


class HeadQuery(Query):
    """``GET /api/v1/sessions/{sid}/head``."""

    brief: str | None = Field(default=None, max_length=10,
                              description="any value: only sid, rev, fsm and ts")


class HistoryQuery(Query):
    """``GET /api/v1/sessions/{sid}/history``."""

    # Bounded so that the page's end (offset + limit) is still a 64-bit integer.
    offset: QueryInt = Field(default=0, ge=0, le=MAX_INT - MAX_HISTORY_PAGE,
                             description="first revision")
    limit: QueryInt = Field(default=100, ge=1, le=MAX_HISTORY_PAGE,
                            description="revisions in the page")


class DiffQuery(Query):
    """``GET /api/v1/sessions/{sid}/diff``."""

    a: QueryInt = Field(ge=0, le=MAX_INT, description="from revision")
    b: QueryInt = Field(ge=0, le=MAX_INT, description="to revision")


class CompareQuery(Query):
    """``/compare`` and ``/api/v1/compare``: two sessions side by side."""

    a: str = Field(min_length=1, max_length=200, description="a session id")
    b: str = Field(min_length=1, max_length=200, description="another session id")


class RevisionPath(Query):
    """``/api/v1/sessions/{sid}/revisions/{rev}``."""

    rev: QueryInt = Field(ge=0, le=MAX_INT, description="the revision number")


def bad_input(exc: ValidationError, where: str = "") -> BadInput:
    """The first validation problem as ``BAD_INPUT`` naming its field."""
    err = exc.errors()[0]
    name = ".".join(str(p) for p in err["loc"]) or where or "body"
    return BadInput(f"{name}: {err['msg']}", field=name)


def query_model(request: Request, model: type[M], *, path: bool = False) -> M:
    """The request's query parameters (``path``: its path parameters) as ``model``; a
    bad one is ``BAD_INPUT`` naming it. An empty value counts as absent, as forms send
    their empty fields."""
    raw = request.path_params if path else request.query_params
    values = {k: v for k, v in raw.items() if v != ""}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise bad_input(exc, "query") from None
