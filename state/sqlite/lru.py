"""The small thread-safe LRU map behind the SQLite store's caches."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Lru"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A small thread-safe LRU map bounded by entry count."""

    def __init__(self, size: int) -> None:
        self._size = max(1, size)
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        # The value without marking it used: the dict's own ``get`` (no lock needed, and
        # no Python frame: a cold read asks several times what the cache does not hold).
        self.peek: Callable[[K], V | None] = self._data.get
        self.count: Callable[[], int] = self._data.__len__  # ``len()``, as cheaply

    def get(self, key: K) -> V | None:
        """The value, marked recently used; ``None`` if absent."""
        # Each OrderedDict call is atomic, so a miss (every cold read) takes no lock.
        value = self._data.get(key)
        if value is not None:
            with self._lock:
                if key in self._data:  # not evicted in between
                    self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        """Insert or refresh, evicting the least recently used beyond the bound."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()
