"""Weighted max-min fair rates by progressive filling.

A flow ``f`` puts ``w[l, f] × r_f`` bytes/s on link ``l`` (``w`` is the entry of the incidence
matrix: 1 for a plain route, above 1 for a pipelined chain that crosses a link twice, below 1 for a
flow split over several paths). A rate vector is feasible when ``Σ_f w[l, f] r_f ≤ c_l`` on every
link and ``r_f ≤ cap_f``; it is *max-min fair* when no flow's rate can rise without lowering the
rate of a flow that already has a rate no larger.

Progressive filling (Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2) finds it: every
unfrozen flow's rate rises at the same pace from 0; when a link saturates, every flow crossing it
freezes; a flow also freezes when it reaches its cap; repeat until all flows are frozen. The result
satisfies the optimality certificate of the same section, here with weights: every flow either
sits at its cap or crosses a saturated link on which no other flow has a larger rate (its
*bottleneck*). The weights change which link saturates first, not the certificate.

Two kinds of pass share one state (per link: weight of the rising flows, load of the frozen ones,
and the *level* — the common rate at which the link would saturate):

* **local minima** (while they make quick progress): a link whose level is no higher than the
  level of any link its rising flows cross, and no higher than their caps, saturates at exactly
  that level whatever else happens first — freezing a flow at or below a link's level can only
  raise that link's level (``(c - L - w·r) / (W - w) ≥ (c - L) / W`` when ``r ≤ (c - L) / W``).
  So every such link saturates in the same pass; on fabrics where flows contend at one or two
  tiers this finishes in a few passes of ``O(live entries)``.
* **global minimum** (the textbook order, for what is left): the lowest level saturates; each
  pass touches only the entries of the links that saturate and the flows that freeze, plus two
  vectorised scans over the per-link levels.

>>> import numpy as np
>>> from scipy.sparse import csr_matrix
>>> a = csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))  # 2 links, 3 flows
>>> max_min_rates(a, np.array([1.0, 2.0])).tolist()  # flow 1 shares both links
[0.5, 0.5, 1.5]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from commwall.engines.base import EngineInputError, InvariantError

if TYPE_CHECKING:  # scipy.sparse is imported where it is used (~20 MiB, ~80 ms on every start)
    from scipy import sparse  # type: ignore[import-untyped]  # no stubs in the venv

__all__ = ["FloatArray", "IntArray", "distinct", "gather_ranges", "max_min_rates"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Relative tolerance on levels: links whose saturation levels are this close saturate together
#: (and flows whose caps are), so near-ties cost one pass, not many.
LEVEL_RTOL = 1e-12
#: Local-minimum passes continue while each freezes at least this share of the rising flows.
_LOCAL_PROGRESS = 0.125


def max_min_rates(
    incidence: sparse.csr_matrix,
    capacity: FloatArray,
    cap: FloatArray | None = None,
) -> FloatArray:
    """Max-min fair rate of every flow (bytes/s), by progressive filling.

    ``incidence``: ``(n_links, n_flows)`` sparse matrix, entry ``w > 0`` = the flow puts ``w`` × its
    rate on that link (any scipy sparse format, CSC the cheapest; duplicate entries add up; zero
    entries are ignored). ``capacity``: ``(n_links,)`` bytes/s, all ``> 0``. ``cap``:
    ``(n_flows,)`` per-flow ceiling, ``np.inf`` for none. A flow that crosses no link needs a
    finite cap, else its rate is unbounded (``ValueError``). No link ends above
    ``capacity × (1 + 1e-12)``; rates are never negative.
    (Bertsekas & Gallager, *Data Networks*, §6.5.2.)

    >>> import numpy as np
    >>> from scipy.sparse import csr_matrix
    >>> one_link = csr_matrix(np.ones((1, 4)))
    >>> max_min_rates(one_link, np.array([8.0])).tolist()  # C / n each
    [2.0, 2.0, 2.0, 2.0]
    >>> max_min_rates(one_link, np.array([8.0]), np.array([1.0, np.inf, np.inf, np.inf])).tolist()
    [1.0, 2.3333333333333335, 2.3333333333333335, 2.3333333333333335]
    """
    from scipy import sparse

    if not sparse.issparse(incidence):
        incidence = sparse.csr_matrix(incidence)
    by_flow = incidence.tocsc()  # no copy when already CSC
    n_links, n_flows = by_flow.shape
    capacity = np.asarray(capacity, dtype=np.float64)
    _check(by_flow, capacity, n_links)
    ceiling = _ceiling(cap, n_flows)
    if (by_flow.data == 0).any():
        by_flow = by_flow.copy()
        by_flow.eliminate_zeros()
    unbounded = (np.diff(by_flow.indptr) == 0) & np.isinf(ceiling)
    if unbounded.any():
        flow = int(np.flatnonzero(unbounded)[0])
        raise EngineInputError(
            f"flow {flow} crosses no link and has no cap: its rate is unbounded "
            f"({int(unbounded.sum())} such flows)"
        )
    filling = _Filling(by_flow, capacity, ceiling)
    while filling.left and filling.local_pass() >= _LOCAL_PROGRESS:
        pass
    if filling.left:
        filling.global_passes()
    return filling.rates


class _Filling:
    """The state of one progressive filling."""

    def __init__(self, by_flow: sparse.csc_matrix, capacity: FloatArray, ceiling: FloatArray):
        n_links, n_flows = by_flow.shape
        self.by_flow, self.capacity, self.ceiling = by_flow, capacity, ceiling
        self.col_len = np.diff(by_flow.indptr)
        # entries of the rising flows, flow-major; they shrink as flows freeze
        self.e_flow = np.repeat(np.arange(n_flows), self.col_len)
        self.e_link = by_flow.indices
        self.e_w = by_flow.data
        self.weight = np.zeros(n_links)  # Σ w of the rising flows
        np.add.at(self.weight, self.e_link, self.e_w)
        # exact count of rising entries: a link dies at 0, whatever rounding did to weight
        self.live = np.bincount(self.e_link, minlength=n_links)
        self.load = np.zeros(n_links)  # Σ w·r of the frozen flows
        self.level = np.full(n_links, np.inf)
        rising = self.live > 0
        self.level[rising] = capacity[rising] / self.weight[rising]
        self.rates = np.zeros(n_flows)
        self.frozen = np.zeros(n_flows, dtype=bool)
        self.left: int = int(n_flows)

    def local_pass(self) -> float:
        """Saturate every link that is a local minimum; the share of rising flows frozen."""
        n_links, n_flows = self.by_flow.shape
        at_entry = self.level[self.e_link]
        links_min = np.full(n_flows, np.inf)
        np.minimum.at(links_min, self.e_flow, at_entry)
        flow_level = np.minimum(links_min, self.ceiling)
        around = np.full(n_links, np.inf)
        np.minimum.at(around, self.e_link, flow_level[self.e_flow])
        bottleneck = at_entry <= around[self.e_link] * (1 + LEVEL_RTOL)
        newly = np.zeros(n_flows, dtype=bool)
        newly[self.e_flow[bottleneck]] = True
        newly |= self.ceiling <= links_min * (1 + LEVEL_RTOL)
        newly &= ~self.frozen
        rising_before = self.left
        self.rates[newly] = flow_level[newly]
        if int(newly.sum()) == rising_before:  # all done: the link bookkeeping has no reader
            self.frozen[:] = True
            self.left = 0
            return 1.0
        leaving = newly[self.e_flow]
        self._retire(
            np.flatnonzero(newly), self.e_link[leaving], self.e_w[leaving], self.e_flow[leaving]
        )
        keep = ~leaving
        self.e_flow, self.e_link, self.e_w = self.e_flow[keep], self.e_link[keep], self.e_w[keep]
        return (rising_before - self.left) / rising_before

    def global_passes(self) -> None:
        """Saturate the lowest level, pass after pass, until every flow is frozen."""
        by_link = self.by_flow.tocsr()  # built only now: easy problems never need it
        row_ptr, row_flow = by_link.indptr, by_link.indices
        col_ptr, col_link, col_w = self.by_flow.indptr, self.by_flow.indices, self.by_flow.data
        by_cap = np.argsort(self.ceiling, kind="stable")
        cap_sorted = self.ceiling[by_cap]
        has_caps = bool(np.isfinite(cap_sorted[0]))
        next_cap = 0
        slot = np.zeros(len(self.rates), dtype=np.int64)
        while self.left:
            while self.frozen[by_cap[next_cap]]:  # amortised O(n_flows) over the whole fill
                next_cap += 1
            level = float(self.level.min(initial=cap_sorted[next_cap]))
            if not np.isfinite(level):  # excluded by the unbounded-flow check; never spin
                raise InvariantError("progressive filling found no bottleneck: a rate is unbounded")
            reach = level * (1.0 + LEVEL_RTOL)
            saturated = np.flatnonzero(self.level <= reach)
            candidates = row_flow[gather_ranges(row_ptr, saturated)]
            if has_caps:
                stop = int(np.searchsorted(cap_sorted, reach, side="right"))
                candidates = np.concatenate((candidates, by_cap[next_cap:stop]))
            newly, _ = distinct(candidates[~self.frozen[candidates]], slot)
            self.rates[newly] = np.minimum(level, self.ceiling[newly])
            entries = gather_ranges(col_ptr, newly)
            flows = np.repeat(newly, self.col_len[newly])
            self._retire(newly, col_link[entries], col_w[entries], flows)

    def _retire(self, newly: IntArray, links: IntArray, w: FloatArray, flows: IntArray) -> None:
        """Freeze ``newly`` (rates already set): their entries leave the rising weight of the
        links they cross and join those links' fixed load; those links' levels are renewed."""
        self.frozen[newly] = True
        self.left -= len(newly)
        np.subtract.at(self.weight, links, w)
        np.add.at(self.load, links, w * self.rates[flows])
        np.subtract.at(self.live, links, 1)
        if len(links) > len(self.level) // 2:  # many entries: one pass over the links is cheaper
            links = np.arange(len(self.level))
        rising = self.live[links] > 0
        self.level[links[~rising]] = np.inf
        alive = links[rising]
        fresh = (self.capacity[alive] - self.load[alive]) / np.maximum(
            self.weight[alive], np.finfo(np.float64).tiny
        )
        # A level can only rise as flows freeze at or below it; rounding must not lower it.
        self.level[alive] = np.maximum(fresh, self.level[alive])


def distinct(values: IntArray, slot: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct ``values`` and each value's position among them, in O(len(values)).

    ``slot`` is scratch indexed by value; it needs no clearing because every slot read was written
    first. (``np.unique`` sorts, which dominated the filling time.)
    """
    order = np.arange(len(values))
    slot[values] = order  # one occurrence of each value wins (which one does not matter)
    unique = values[slot[values] == order]
    slot[unique] = np.arange(len(unique))
    return unique, slot[values]


def gather_ranges(ptr: IntArray, rows: IntArray) -> IntArray:
    """Concatenated ``arange(ptr[r], ptr[r + 1])`` over ``rows``, without a Python loop."""
    starts, stops = ptr[rows], ptr[rows + 1]
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    # offset of each output slot from its row's start: a global arange minus each row's first slot
    first = np.cumsum(lengths) - lengths
    return np.repeat(starts - first, lengths) + np.arange(total)


def _check(a: sparse.spmatrix, capacity: FloatArray, n_links: int) -> None:
    if capacity.shape != (n_links,):
        raise EngineInputError(f"capacity has shape {capacity.shape}, expected ({n_links},)")
    bad = ~(np.isfinite(capacity) & (capacity > 0))
    if bad.any():
        link = int(np.flatnonzero(bad)[0])
        raise EngineInputError(
            f"capacity[{link}] = {float(capacity[link])!r}: must be finite and > 0"
        )
    data = np.asarray(a.data)
    if data.size and not (np.isfinite(data).all() and (data >= 0).all()):
        raise EngineInputError("incidence weights must be finite and >= 0")


def _ceiling(cap: FloatArray | None, n_flows: int) -> FloatArray:
    if cap is None:
        return np.full(n_flows, np.inf)
    ceiling = np.asarray(cap, dtype=np.float64)
    if ceiling.shape != (n_flows,):
        raise EngineInputError(f"cap has shape {ceiling.shape}, expected ({n_flows},)")
    bad = np.isnan(ceiling) | (ceiling <= 0)
    if bad.any():
        flow = int(np.flatnonzero(bad)[0])
        raise EngineInputError(
            f"cap[{flow}] = {float(ceiling[flow])!r}: must be > 0 (np.inf for none)"
        )
    return ceiling
