"""A compact set of pair ids: 8 bytes an id (a million ids in 8 MB, where a Python set of the strings takes ~100 MB).

Ids are kept as 64-bit BLAKE2b hashes in one sorted numpy array: new ids collect in a small buffer that is merged into
the sorted array when it fills, so adding and testing are cheap at any size. The merge works in place (the array
grows by doubling, the old hashes shift right from the back): merging by `np.union1d` allocated a new, larger array
and several temporaries at every merge, and glibc kept the freed heap, so a set of a million ids held ~55 MB of RSS
for 8 MB of hashes (bench/scale.py measured it; tests/runs/test_scale.py::test_idset_memory holds it down). Two
different ids share a hash with probability about n^2 / 2^65 (3e-8 for a million ids): `IdSet` answers "maybe
present" for such a pair, so use it where a false "present" costs nothing wrong (choosing which stored rows belong
to a split; suspecting a duplicate that an exact second look then confirms), never to skip work.

Example:
    >>> ids = IdSet(["p1", "p2"])
    >>> "p1" in ids, "p3" in ids, len(ids)
    (True, False, 2)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

BUFFER = 65_536  # ids added before a merge into the sorted array


def id_hash(pair_id: str) -> int:
    """The 64-bit hash an IdSet keeps for `pair_id`."""
    return int.from_bytes(hashlib.blake2b(pair_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class IdSet:
    """A set of ids held as sorted 64-bit hashes (see the module doc for what a hash collision means)."""

    def __init__(self, ids: Iterable[str] = ()):
        self._data = np.empty(0, dtype=np.uint64)  # sorted hashes in [:_n]; the rest is spare capacity
        self._n = 0
        self._buffer: set[int] = set()
        for pair_id in ids:
            self.add(pair_id)

    def add(self, pair_id: str) -> bool:
        """Add an id; False if it (or an id with the same hash) was already in the set."""
        h = id_hash(pair_id)
        if h in self._buffer or self._in_sorted(h):
            return False
        self._buffer.add(h)
        if len(self._buffer) >= BUFFER:
            self._merge()
        return True

    def __contains__(self, pair_id: object) -> bool:
        if not isinstance(pair_id, str):
            return False
        h = id_hash(pair_id)
        return h in self._buffer or self._in_sorted(h)

    def __len__(self) -> int:
        return self._n + len(self._buffer)

    def _in_sorted(self, h: int) -> bool:
        i = int(np.searchsorted(self._data[:self._n], np.uint64(h)))
        return i < self._n and int(self._data[i]) == h

    def _merge(self) -> None:
        """Merge the buffer (hashes not yet in the array) into the sorted array in place."""
        new = np.fromiter(self._buffer, dtype=np.uint64, count=len(self._buffer))
        new.sort()
        n, k = self._n, len(new)
        if n + k > len(self._data):
            grown = np.empty(max(2 * len(self._data), n + k, BUFFER), dtype=np.uint64)
            grown[:n] = self._data[:n]
            self._data = grown
        data = self._data
        at = np.searchsorted(data[:n], new).tolist()  # where each new hash goes among the old ones
        end = n
        for j in range(k - 1, -1, -1):  # from the back: shift the old hashes after at[j] right by j + 1
            p = at[j]
            if p < end:
                data[p + j + 1:end + j + 1] = data[p:end]
            data[p + j] = new[j]
            end = p
        self._n = n + k
        self._buffer.clear()
