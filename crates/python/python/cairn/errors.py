"""The exceptions of Cairn: one class per variant of the engine's ``cairn::Error``.

Every exception Cairn raises derives from :class:`Error`. Classes that are also a
caller's mistake derive from :class:`ValueError` too (:class:`InvalidArgumentError`,
:class:`NotACounterError`), :class:`IOError` derives from :class:`OSError` (with
``errno`` and ``filename`` set when the operating system gave them), and
:class:`CounterOverflowError` from :class:`OverflowError`. A missing key read with
``keyspace[key]`` or ``reader[key]`` raises the built-in :class:`KeyError`; lookups with
``get`` return ``None`` instead.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "IOError",
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
]


class Error(Exception):
    """Base class of every error Cairn raises."""


class IOError(Error, OSError):  # noqa: A001 - mirrors cairn::Error::Io
    """An operating-system I/O call failed.

    ``errno`` and ``filename`` are set when known; ``op`` says what Cairn was doing
    (``"open"``, ``"write"``, ``"fsync"``, ...). A store already open in another process
    (or still open in this one) fails with ``errno.EAGAIN``/``EWOULDBLOCK``.
    """

    op: str | None = None


class CorruptionError(Error):
    """Bytes on disk disagree with the format.

    ``file`` names the kind of file (``"table file"``, ``"index file"``, ...), ``path``
    the file, ``offset`` the byte where the damage was detected and ``reason`` what was
    wrong. Files that do not belong together and versions this build cannot read are
    subclasses (:class:`IdentifierMismatchError`, :class:`UnsupportedVersionError`).
    """

    file: str | None = None
    path: str | None = None
    offset: int | None = None
    reason: str | None = None


class UnsupportedVersionError(CorruptionError):
    """The file is of a format version this build cannot read (``major``, ``minor``)."""

    major: int | None = None
    minor: int | None = None


class IdentifierMismatchError(CorruptionError):
    """A Sparkey log and index that do not belong together (``log``, ``index``)."""

    log: str | None = None
    index: str | None = None


class BadInputError(Error, ValueError):
    """A record of a dump being read back is malformed (nothing on disk is damaged)."""


class InvalidArgumentError(Error, ValueError):
    """The caller passed an argument Cairn cannot accept (a key too long, a bad option)."""


class PoisonedError(Error):
    """An earlier write or fsync failed; the writer refuses further work. Reopen."""


class StoppedError(Error):
    """Background work failed earlier (``during``); the store refuses writes. Reopen."""

    during: str | None = None


class ReadOnlyError(Error):
    """The store was opened read-only (or as a follower): writes are refused."""


class NotACounterError(Error, ValueError):
    """``incr``/``decr`` found a value that is not a decimal ``i64`` (``key``, ``value_prefix``)."""

    key: bytes | None = None
    value_prefix: bytes | None = None
    value_len: int | None = None


class CounterOverflowError(Error, OverflowError):
    """``incr``/``decr`` would leave the range of a 64-bit signed integer."""

    key: bytes | None = None
    current: int | None = None
    delta: int | None = None


class FeatureDisabledError(Error):
    """The operation needs a Cargo feature this build of Cairn lacks (``feature``)."""

    feature: str | None = None


class ConflictError(Error):
    """A transaction's commit found that another write changed, after its snapshot, a key
    it writes (or, serializable, a key or range it read): ``keyspace``, ``key``, and
    ``read`` (True if the transaction read it). Nothing was written; run the transaction
    again (``Db.update`` does)."""

    keyspace: str | None = None
    key: bytes | None = None
    read: bool | None = None


class MergeError(Error):
    """A keyspace's merge operator (``operator``) could not combine the operands of
    ``key`` (``detail`` says why), so the key has no value to return. Nothing was lost:
    the operands stay as written, and a put of the key replaces them."""

    operator: str | None = None
    key: bytes | None = None
    detail: str | None = None


class ClosedError(Error):
    """The store, snapshot, iterator, batch, writer or reader was closed."""
