"""Ordered views for ``Keyspace.keys()``, ``values()`` and ``items()``.

They are the ``collections.abc`` views with iteration done by one native scan each (a
consistent point-in-time read, values fetched in chunks) instead of a lookup per key.
``len()`` of a view counts the keys (a scan); ``reversed()`` scans backwards.
"""

from collections.abc import ItemsView as _ItemsView
from collections.abc import KeysView as _KeysView
from collections.abc import ValuesView as _ValuesView


class KeysView(_KeysView):
    """The keys of a keyspace, in order."""

    __slots__ = ()

    def __iter__(self):
        return self._mapping._scan("keys")

    def __reversed__(self):
        return self._mapping._scan("keys", True)


class ValuesView(_ValuesView):
    """The values of a keyspace, in key order."""

    __slots__ = ()

    def __iter__(self):
        return self._mapping._scan("values")

    def __reversed__(self):
        return self._mapping._scan("values", True)


class ItemsView(_ItemsView):
    """The ``(key, value)`` pairs of a keyspace, in key order."""

    __slots__ = ()

    def __iter__(self):
        return self._mapping._scan("items")

    def __reversed__(self):
        return self._mapping._scan("items", True)
