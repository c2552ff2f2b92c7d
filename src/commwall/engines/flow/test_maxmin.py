"""Max-min fair rates: closed forms, the optimality certificate on random problems, bad input."""

from __future__ import annotations

import doctest
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.engines.flow import maxmin
from commwall.engines.flow.maxmin import FloatArray, max_min_rates

INF = np.inf


def _matrix(n_links: int, n_flows: int, entries: list[tuple[int, int, float]]) -> sparse.csr_matrix:
    link, flow, w = zip(*entries, strict=True) if entries else ((), (), ())
    return sparse.csr_matrix((w, (link, flow)), shape=(n_links, n_flows))


def _certify(
    a: sparse.csr_matrix, capacity: FloatArray, cap: FloatArray, rates: FloatArray
) -> None:
    """Feasible, and every flow is capped or has a bottleneck (Bertsekas & Gallager §6.5.2)."""
    assert (rates >= 0).all()
    assert (rates <= cap * (1 + 1e-12)).all()
    load = a @ rates
    assert (load <= capacity * (1 + 1e-9)).all()
    saturated = load >= capacity * (1 - 1e-9)
    dense = a.toarray() > 0
    for f in range(a.shape[1]):
        if rates[f] >= cap[f] * (1 - 1e-9):
            continue
        links = np.flatnonzero(dense[:, f] & saturated)
        assert any(rates[f] >= rates[dense[link]].max() * (1 - 1e-9) for link in links), (
            f"flow {f} at {rates[f]} has no bottleneck link"
        )


# ---------------------------------------------------------------- closed forms
def test_bertsekas_gallager_example() -> None:
    # The example network of B&G §6.5.2 (unit capacities): the caption gives the bottlenecks
    # of sessions 1..5 as (3,5), (2,3), (2,3), (4,5), (2,3) and says link (1,3) keeps 1/3 spare.
    links = {"13": 0, "23": 1, "35": 2, "45": 3}
    routes = {0: ["13", "35"], 1: ["23"], 2: ["23"], 3: ["45"], 4: ["23", "35"]}
    entries = [(links[name], s, 1.0) for s, path in routes.items() for name in path]
    a = _matrix(4, 5, entries)
    rates = max_min_rates(a, np.ones(4))
    np.testing.assert_allclose(rates, [2 / 3, 1 / 3, 1 / 3, 1.0, 1 / 3], rtol=1e-12)
    np.testing.assert_allclose(1 - (a @ rates)[links["13"]], 1 / 3, rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_single_link_shared_equally(n: int) -> None:
    rates = max_min_rates(sparse.csr_matrix(np.ones((1, n))), np.array([100.0]))
    np.testing.assert_allclose(rates, 100.0 / n, rtol=1e-15)


def test_chain_long_flow_gets_the_tightest_share() -> None:
    # Flow 0 crosses links 0..3 (capacities 4, 3, 6, 8); flow k+1 crosses link k only.
    capacity = np.array([4.0, 3.0, 6.0, 8.0])
    entries = [(k, 0, 1.0) for k in range(4)] + [(k, k + 1, 1.0) for k in range(4)]
    rates = max_min_rates(_matrix(4, 5, entries), capacity)
    np.testing.assert_allclose(rates, [1.5, 2.5, 1.5, 4.5, 6.5], rtol=1e-12)


def test_weight_two_alone_gets_half() -> None:
    rates = max_min_rates(_matrix(1, 1, [(0, 0, 2.0)]), np.array([10.0]))
    np.testing.assert_allclose(rates, [5.0])


def test_weight_two_shares_at_equal_rates() -> None:
    # Rates rise together: 2r + r = C, so both get C/3 and the w=2 flow uses 2C/3 of the link.
    rates = max_min_rates(_matrix(1, 2, [(0, 0, 2.0), (0, 1, 1.0)]), np.array([9.0]))
    np.testing.assert_allclose(rates, [3.0, 3.0])


def test_split_flow_with_fractional_weights() -> None:
    # One flow split half-and-half over two parallel links of 10: it can reach 20.
    rates = max_min_rates(_matrix(2, 1, [(0, 0, 0.5), (1, 0, 0.5)]), np.array([10.0, 10.0]))
    np.testing.assert_allclose(rates, [20.0])


def test_duplicate_entries_add_up() -> None:
    a = sparse.coo_matrix(([1.0, 1.0], ([0, 0], [0, 0])), shape=(1, 1))
    np.testing.assert_allclose(max_min_rates(a, np.array([10.0])), [5.0])


def test_caps_release_capacity_to_others() -> None:
    cap = np.array([1.0, 2.0, INF, INF])
    rates = max_min_rates(sparse.csr_matrix(np.ones((1, 4))), np.array([10.0]), cap)
    np.testing.assert_allclose(rates, [1.0, 2.0, 3.5, 3.5])


def test_capped_flow_without_links() -> None:
    a = _matrix(1, 2, [(0, 0, 1.0)])
    np.testing.assert_allclose(max_min_rates(a, np.array([3.0]), np.array([INF, 7.0])), [3.0, 7.0])


def test_no_flows_and_no_links() -> None:
    assert max_min_rates(sparse.csr_matrix((3, 0)), np.ones(3)).shape == (0,)
    a = sparse.csr_matrix((0, 2))
    np.testing.assert_allclose(max_min_rates(a, np.zeros(0), np.array([1.0, 2.0])), [1.0, 2.0])


def test_accepts_csr_array() -> None:
    a = sparse.csr_array(np.ones((1, 2)))
    np.testing.assert_allclose(max_min_rates(a, np.array([4.0])), [2.0, 2.0])


def test_near_ties_saturate_together() -> None:
    # Two links whose saturation levels differ by 1e-14 relative: one level, not two.
    capacity = np.array([1.0, 1.0 + 1e-14, 5.0])
    entries = [(0, 0, 1.0), (1, 1, 1.0), (2, 0, 1.0), (2, 1, 1.0), (2, 2, 1.0)]
    rates = max_min_rates(_matrix(3, 3, entries), capacity)
    np.testing.assert_allclose(rates, [1.0, 1.0, 3.0], rtol=1e-12)
    assert ((_matrix(3, 3, entries) @ rates) <= capacity).all()


# ---------------------------------------------------------------- bad input
def test_unbounded_flow_is_rejected() -> None:
    with pytest.raises(ValueError, match="flow 1 crosses no link"):
        max_min_rates(_matrix(1, 2, [(0, 0, 1.0)]), np.array([1.0]))


@pytest.mark.parametrize(
    ("capacity", "cap", "match"),
    [
        (np.array([0.0]), None, r"capacity\[0\] = 0.0"),
        (np.array([-1.0]), None, r"capacity\[0\]"),
        (np.array([INF]), None, r"capacity\[0\] = inf"),
        (np.array([1.0, 1.0]), None, r"capacity has shape"),
        (np.array([1.0]), np.array([0.0]), r"cap\[0\] = 0.0"),
        (np.array([1.0]), np.array([np.nan]), r"cap\[0\] = nan"),
        (np.array([1.0]), np.array([1.0, 2.0]), r"cap has shape"),
    ],
)
def test_bad_input(capacity: FloatArray, cap: FloatArray | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        max_min_rates(_matrix(1, 1, [(0, 0, 1.0)]), capacity, cap)


def test_negative_weight_is_rejected() -> None:
    with pytest.raises(ValueError, match="weights"):
        max_min_rates(_matrix(1, 1, [(0, 0, -1.0)]), np.array([1.0]))


# ---------------------------------------------------------------- invariants
@st.composite
def problems(draw: st.DrawFn) -> tuple[sparse.csr_matrix, FloatArray, FloatArray]:
    n_links = draw(st.integers(1, 8))
    n_flows = draw(st.integers(1, 10))
    levels = st.sampled_from([0.5, 1.0, 2.0, 3.0, 10.0])  # few values: ties are the hard part
    capacity = np.array(draw(st.lists(levels, min_size=n_links, max_size=n_links)))
    entries: list[tuple[int, int, float]] = []
    cap = np.full(n_flows, INF)
    for f in range(n_flows):
        links = draw(st.sets(st.integers(0, n_links - 1), max_size=n_links))
        weights = st.sampled_from([0.25, 0.5, 1.0, 1.0, 2.0, 3.0])
        entries += [(link, f, draw(weights)) for link in sorted(links)]
        if not links or draw(st.booleans()):
            cap[f] = draw(st.sampled_from([0.1, 0.3, 1.0, 2.5]))
    return _matrix(n_links, n_flows, entries), capacity, cap


def _local_only(a: sparse.csr_matrix, capacity: FloatArray, cap: FloatArray) -> FloatArray:
    filling = maxmin._Filling(sparse.csc_matrix(a), capacity, cap)
    while filling.left:
        assert filling.local_pass() > 0  # the global minimum is always a local one
    return filling.rates


def _global_only(a: sparse.csr_matrix, capacity: FloatArray, cap: FloatArray) -> FloatArray:
    filling = maxmin._Filling(sparse.csc_matrix(a), capacity, cap)
    filling.global_passes()
    return filling.rates


Solver = Callable[[sparse.csr_matrix, FloatArray, FloatArray], FloatArray]
SOLVERS: dict[str, Solver] = {"mixed": max_min_rates, "local": _local_only, "global": _global_only}


@pytest.mark.parametrize("solver", SOLVERS)
@given(problem=problems())
@settings(max_examples=100, deadline=None)
def test_max_min_certificate_holds(
    solver: str, problem: tuple[sparse.csr_matrix, FloatArray, FloatArray]
) -> None:
    a, capacity, cap = problem
    _certify(a, capacity, cap, SOLVERS[solver](a, capacity, cap))


@pytest.mark.parametrize("solver", SOLVERS)
def test_certificate_on_a_larger_random_problem(solver: str) -> None:
    rng = np.random.default_rng(7)
    n_links, n_flows, per = 60, 200, 5
    link = rng.integers(0, n_links, size=n_flows * per)
    flow = np.repeat(np.arange(n_flows), per)
    a = sparse.csr_matrix((rng.choice([0.5, 1.0, 2.0], size=link.size), (link, flow)))
    capacity = rng.choice([1.0, 2.0, 4.0], size=n_links)
    cap = np.where(rng.random(n_flows) < 0.2, rng.uniform(0.01, 0.2, n_flows), INF)
    rates = SOLVERS[solver](a, capacity, cap)
    _certify(a, capacity, cap, rates)
    np.testing.assert_allclose(rates, _global_only(a, capacity, cap), rtol=1e-11)


def test_independent_bottlenecks_take_one_local_pass() -> None:
    # 50 disjoint groups, each k flows on its own link: every link is a local minimum.
    groups, k = 50, np.arange(1, 51)
    flow_link = np.repeat(np.arange(groups), k)
    a = sparse.csc_matrix((np.ones(k.sum()), (flow_link, np.arange(k.sum()))))
    filling = maxmin._Filling(a, np.full(groups, 60.0), np.full(k.sum(), INF))
    assert filling.local_pass() == 1.0
    np.testing.assert_allclose(filling.rates, 60.0 / np.repeat(k, k))


def test_certificate_catches_a_wrong_answer() -> None:
    # The checker must be able to fail: halving a fair allocation leaves no bottleneck.
    a = _matrix(1, 2, [(0, 0, 1.0), (0, 1, 1.0)])
    with pytest.raises(AssertionError, match="no bottleneck"):
        _certify(a, np.array([2.0]), np.full(2, INF), np.array([0.5, 0.5]))


def test_doctests() -> None:
    assert doctest.testmod(maxmin).failed == 0
