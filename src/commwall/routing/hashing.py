"""Deterministic, vectorised integer hashing for path choice.

A switch's ECMP hash is modelled by SplitMix64, the 64-bit finaliser of Steele, Lea and Flood,
"Fast Splittable Pseudorandom Number Generators", OOPSLA 2014: a bijection on 64-bit words whose
output bits each depend on every input bit, so ``hash mod n`` spreads keys evenly over ``n``
choices. The arithmetic wraps modulo 2⁶⁴, which numpy's uint64 *array* operations do silently, so
every function here takes and returns 1-D uint64 arrays (never numpy scalars, which warn).

>>> import numpy as np
>>> splitmix64(np.array([0, 1], dtype=np.uint64)).tolist()
[16294208416658607535, 10451216379200822465]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["U64Array", "as_u64", "flow_keys", "pick", "pick_salted", "salt_hash", "splitmix64"]

U64Array = npt.NDArray[np.uint64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_MASK64 = (1 << 64) - 1
_SALT_OFFSET = np.uint64(0x632BE59BD9B4E019)  # keeps salt 0 from hashing like key 0


def as_u64(values: npt.ArrayLike) -> U64Array:
    """A 1-D uint64 array (int64 values are reinterpreted modulo 2⁶⁴)."""
    arr = np.atleast_1d(np.asarray(values))
    if arr.dtype == np.uint64:
        return arr
    return arr.astype(np.int64).view(np.uint64)


def splitmix64(x: U64Array) -> U64Array:
    """SplitMix64 finaliser of each element (Steele, Lea, Flood, OOPSLA 2014)."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def flow_keys(seed: int, *parts: npt.ArrayLike) -> U64Array:
    """One 64-bit key per element: ``parts`` (equal-length or broadcastable integer arrays, e.g.
    src, dst, flow id, sub-flow) chained through SplitMix64 from ``seed``."""
    n = max((np.size(p) for p in parts), default=1)
    h = splitmix64(np.full(n, seed & _MASK64, dtype=np.uint64))
    for p in parts:
        h = splitmix64(h ^ as_u64(p))
    return h


def salt_hash(salt: npt.ArrayLike) -> U64Array:
    """The per-switch seed of a hash function, from a salt (e.g. the switch's node id)."""
    return splitmix64(as_u64(salt) + _SALT_OFFSET)


def pick_salted(key: U64Array, salt_h: U64Array, n: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """:func:`pick` with the salt already through :func:`salt_hash` (hash a table of switch
    salts once, then gather it per flow)."""
    return (splitmix64(key ^ salt_h) % as_u64(n)).astype(np.int64)


def pick(key: U64Array, salt: npt.ArrayLike, n: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The choice ``hash(key, salt) mod n`` in ``0..n-1`` of each element (``n >= 1``).

    ``salt`` is the hash function's per-switch seed: different salts give independent choices for
    the same key; one salt everywhere gives the same choice at every switch (polarization).
    """
    return pick_salted(key, salt_hash(salt), n)
