"""Cairn: an embedded key-value storage engine, from Python.

Two stores:

* the ordered store, :class:`Db`: named :class:`Keyspace` objects that behave as
  ``collections.abc.MutableMapping`` over ``bytes``, with range and prefix scans (forward
  and reverse), atomic :class:`Batch` writes across keyspaces, O(1) :class:`Snapshot`
  views, counters, per-entry TTL and metadata, and a durability mode per store and per
  write;
* the constant store, :mod:`cairn.sparkey`: build-once, read-many files in the Sparkey
  format (a log plus a hash index), readable by any Sparkey implementation.

Every call that does I/O releases the GIL, so threads sharing a store run in parallel.
Errors are subclasses of :class:`cairn.Error` (see :mod:`cairn.errors`).

Example::

    import cairn

    with cairn.Db("my-store") as db:
        users = db.keyspace("users")
        users[b"u:42"] = b"Ada"
        with db.batch() as batch:
            batch.insert(users, b"u:43", b"Grace")
        for key, value in users.prefix(b"u:"):
            print(key, value)
"""

from collections.abc import Mapping, MutableMapping

from . import errors
from ._cairn import (
    Batch,
    Db,
    Head,
    Iterator,
    Keyspace,
    Snapshot,
    Transaction,
    ValueReader,
    __version__,
    verify,
)
from .errors import (
    BadInputError,
    ClosedError,
    ConflictError,
    CorruptionError,
    CounterOverflowError,
    Error,
    FeatureDisabledError,
    IdentifierMismatchError,
    InvalidArgumentError,
    IOError,
    MergeError,
    NotACounterError,
    PoisonedError,
    ReadOnlyError,
    StoppedError,
    UnsupportedVersionError,
)
from . import sparkey

MutableMapping.register(Keyspace)
Mapping.register(sparkey.Reader)

__all__ = [
    "Db",
    "Keyspace",
    "Batch",
    "Snapshot",
    "Transaction",
    "Iterator",
    "Head",
    "ValueReader",
    "verify",
    "sparkey",
    "errors",
    "Error",
    "CorruptionError",
    "UnsupportedVersionError",
    "IdentifierMismatchError",
    "BadInputError",
    "InvalidArgumentError",
    "PoisonedError",
    "StoppedError",
    "ReadOnlyError",
    "NotACounterError",
    "CounterOverflowError",
    "FeatureDisabledError",
    "ConflictError",
    "MergeError",
    "ClosedError",
    "__version__",
]
