"""Value classes whose methods are written once, not generated per class.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and, frozen,
``__hash__``, ``__setattr__``, ``__delattr__``) as source text and compiles it when the
class is created: ~0.5 ms a class on a small VM, and a ``claimfsm step`` process created
~30 such classes before doing any work (docs/bench.md, session 6). The engine's value
classes are declared instead as::

    @dataclass(init=False, repr=False, eq=False)  # fields(), replace(), asdict() still work
    class RateLimit(Record, frozen=True):
        capacity: int
        per_seconds: float

        def __init__(self, capacity: int, per_seconds: float) -> None:
            self._fill(capacity=capacity, per_seconds=per_seconds)

with the one ``__init__`` written by hand; :class:`Record` gives them what the decorator
generated: the same ``repr``, equality (same class, equal fields in order), hash (frozen
classes; others are unhashable, as a dataclass with ``eq`` is) and, with
``frozen=True``, :class:`dataclasses.FrozenInstanceError` on assignment or deletion.
The fields are the dataclass's own (:func:`dataclasses.fields`, read once per class).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError, fields
from operator import attrgetter
from typing import Any, cast

__all__ = ["FACTORY", "Record"]


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


#: The default of an ``__init__`` argument whose field has a ``default_factory``: the
#: factory is called when the argument is not given (as the generated ``__init__`` does).
FACTORY: Any = _Factory()


class Record:
    """The methods ``@dataclass`` would generate, for a dataclass declared with
    ``init=False, repr=False, eq=False`` (``frozen=True`` as a class keyword)."""

    __slots__ = ()

    def __init_subclass__(cls, *, frozen: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if frozen:
            cls.__setattr__ = _refuse_set  # type: ignore[method-assign,assignment]
            cls.__delattr__ = _refuse_delete  # type: ignore[method-assign,assignment]
            cls.__hash__ = _hash  # type: ignore[method-assign,assignment]

    def _fill(self, **values: Any) -> None:
        """Set a new instance's fields (a frozen one's too): ``__init__``'s one line."""
        self.__dict__.update(values)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _keys(type(self))[0])
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = (_KEYS.get(type(self)) or _keys(type(self)))[1]
            return bool(key(self) == key(other))
        return NotImplemented


_Key = Callable[[Any], tuple[Any, ...]]
#: Per class (exactly: a subclass has its own fields): see :func:`_keys`.
_KEYS: dict[type, tuple[tuple[str, ...], _Key, _Key]] = {}


def _getter(names: tuple[str, ...]) -> _Key:
    """The fields ``names`` of an object as a tuple (what the generated methods build)."""
    if len(names) > 1:
        return cast(_Key, attrgetter(*names))
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _keys(cls: type[Record]) -> tuple[tuple[str, ...], _Key, _Key]:
    """The fields ``repr`` shows, and the getters of those ``==`` compares and ``hash``
    hashes, as the dataclass declares them (``field(repr=False, compare=False, hash=...)``),
    worked out once per class."""
    keys = _KEYS.get(cls)
    if keys is None:
        declared = fields(cls)  # type: ignore[arg-type]
        keys = (tuple(f.name for f in declared if f.repr),
                _getter(tuple(f.name for f in declared if f.compare)),
                _getter(tuple(f.name for f in declared
                              if (f.compare if f.hash is None else f.hash))))
        _KEYS[cls] = keys
    return keys


def _hash(self: Record) -> int:
    keys = _KEYS.get(type(self)) or _keys(type(self))
    return hash(keys[2](self))


def _refuse_set(self: Record, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self: Record, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
