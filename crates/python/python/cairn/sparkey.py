"""The constant store: Sparkey log (``.spl``) and index (``.spi``) files.

Write a log with :class:`LogWriter` (puts and deletes, optionally Snappy- or
Zstandard-compressed in blocks), index it with :func:`write_index`, and read it with
:class:`Reader` from any number of threads or processes. :func:`build` does all three
steps from any iterable of ``(key, value)`` pairs. The files are byte-compatible with
every Sparkey implementation.

Example::

    from cairn import sparkey

    sparkey.build("fruit.spl", "fruit.spi", {b"apple": b"red", b"kiwi": b"green"})
    with sparkey.Reader("fruit.spi", "fruit.spl") as r:
        assert r[b"apple"] == b"red"
        assert r.get_many([b"kiwi", b"plum"]) == [b"green", None]
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Tuple, Union

from ._cairn import HashIterator, LogIterator, LogWriter, Reader, iter_log, write_index
from ._cairn import sparkey_verify as verify

_Bytes = Union[bytes, bytearray, memoryview]

__all__ = [
    "LogWriter",
    "Reader",
    "HashIterator",
    "LogIterator",
    "write_index",
    "verify",
    "iter_log",
    "build",
]


def build(
    log_path: Union[str, "os.PathLike[str]"],
    index_path: Union[str, "os.PathLike[str]"],
    pairs: Union[Iterable[Tuple[_Bytes, _Bytes]], Mapping[_Bytes, _Bytes]],
    *,
    compression: str = "none",
    block_size: int = 4096,
    hash_size: Union[int, None] = None,
    seed: Union[int, None] = None,
) -> int:
    """Writes every pair of ``pairs`` to a new log, closes it and indexes it.

    ``pairs`` is a mapping or any iterable of ``(key, value)`` pairs (a later pair of the
    same key wins). Returns the number of pairs written.
    """
    with LogWriter(log_path, compression=compression, block_size=block_size) as writer:
        count = writer.put_many(pairs)
    write_index(index_path, log_path, hash_size=hash_size, seed=seed, fresh=True)
    return count
