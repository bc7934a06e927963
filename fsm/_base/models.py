"""The models' shared base and the trusted constructor, for every layer above.

``Frozen`` is the one base of the library's value models: frozen (state is immutable,
updates go through ``model_copy``), no extra keys, schema built on first use.
``trusted`` builds a model without validating it again, for values the engine made.
Both reach into pydantic's internals (slot setters), so they live here, in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "builder", "trusted"]

M = TypeVar("M", bound=BaseModel)
# Per model class: its fields-set and whether the model is frozen. Frozen models share
# one (they never add to it in place: ``model_copy`` copies it first); others get a copy.
_SHARED: dict[type[BaseModel], tuple[set[str], bool]] = {}
_new = object.__new__
# BaseModel's slot setters, called directly: a third cheaper than ``object.__setattr__``.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """Build a model from values the engine or a store made itself, without validating
    them again (the hot path: validation happens once, where data enters).

    ``values`` must hold every field, already of the right types, nested models built;
    the dict becomes the model's own. Anything that comes from outside (a skill's input
    from stdin, a record, a config file) goes through ``model_validate`` instead.
    """
    known = _SHARED.get(cls)
    if known is None:
        known = _SHARED[cls] = (set(cls.model_fields), bool(cls.model_config.get("frozen")))
    every, frozen = known
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields(obj, every if frozen else every.copy())
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def builder(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """:func:`trusted` for one frozen class, its look-ups done once (a store's cold read
    builds a state and a revision per read)."""
    if not cls.model_config.get("frozen"):
        raise TypeError(f"{cls.__name__} is not frozen: use trusted()")
    every = set(cls.model_fields)
    new, set_dict, set_fields = _new, _set_dict, _set_fields
    set_extra, set_private = _set_extra, _set_private

    def build(values: dict[str, Any]) -> M:
        obj = new(cls)
        set_dict(obj, values)
        set_fields(obj, every)
        set_extra(obj, None)
        set_private(obj, None)
        return obj

    return build


class Frozen(BaseModel):
    """The base of the library's value models: frozen, no extra keys, schema built on
    first use."""

    # defer_build: the validator is compiled on the first validation, not at import. Most
    # revisions are built trusted, so a CLI command that only reads never pays for it
    # (every model of the project does the same; a test checks).
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")
