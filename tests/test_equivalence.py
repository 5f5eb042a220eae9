"""Unit tests of lib.equivalence (chapter 01_parametric_equivalence)."""

import numpy as np
import pytest

from lib import equivalence as E

RNG = np.random.default_rng(0)
X2 = RNG.uniform(-1, 1, (5000, 2))


@pytest.fixture(scope="module")
def net3321():
    return E.identifiable_network((3, 3, 2, 1), seed=1)


def test_forward_shapes_and_relu():
    params = [(np.array([[1.0, 0.0], [0.0, -1.0]]), np.zeros(2)), (np.array([[1.0, 1.0]]), np.array([0.5]))]
    X = np.array([[0.3, 0.2], [-0.3, -0.2]])
    np.testing.assert_allclose(E.forward(params, X), [[0.8], [0.7]])
    np.testing.assert_allclose(E.forward(params, X, alpha=0.1), [[0.8 - 0.02], [0.7 - 0.03]])
    assert [U.shape for U in E.preactivations(params, X)] == [(2, 2)]
    assert E.widths_of(params) == [2, 2, 1]


@pytest.mark.parametrize("bad", [[], [(np.ones((2, 2)), np.ones(3))], [(np.ones(2), np.ones(2))],
                                 [(np.ones((2, 2)), np.ones(2)), (np.ones((1, 3)), np.ones(1))],
                                 [(np.full((2, 2), np.nan), np.ones(2))], "abc", [(np.ones((2, 2)),)]])
def test_bad_params(bad):
    with pytest.raises(ValueError):
        E.forward(bad, np.zeros((1, 2)))


def test_bad_inputs():
    params = E.random_network((2, 3, 1), 0)
    for X in (np.zeros((3, 3)), np.zeros(2), np.zeros((0, 2)), np.array([[np.nan, 0.0]]), [["a", "b"]]):
        with pytest.raises(ValueError):
            E.forward(params, X)
    with pytest.raises(ValueError):
        E.forward(params, np.zeros((1, 2)), alpha=1.5)


def test_symmetries_preserve_function_and_canonicalize():
    params = E.random_network((2, 5, 5, 1), 3)
    perms, scales = E.random_symmetry(params, 4)
    other = E.apply_symmetry(params, perms, scales)
    assert np.abs(E.forward(params, X2) - E.forward(other, X2)).max() < 1e-12
    got_perms, got_scales, err = E.align(params, other)
    assert err < 1e-10
    for p, q, m, n in zip(perms, got_perms, scales, got_scales):
        np.testing.assert_array_equal(p, q)
        np.testing.assert_allclose(m, n, rtol=1e-10)
    assert E.equivalent(params, other)


def test_negative_scale_breaks_function_and_equivalence():
    params = E.identifiable_network((2, 2, 2, 1), 0)
    flip = E.apply_symmetry(params, [np.arange(2)] * 2, [np.array([-1.0, 1.0]), np.ones(2)])
    assert np.abs(E.forward(params, X2) - E.forward(flip, X2)).max() > 1e-2
    _, scales, err = E.align(params, flip)
    assert scales[0][0] < 0 and err > 1e-2
    assert not E.equivalent(params, flip)


def test_symmetry_and_align_bad_input():
    params = E.random_network((2, 3, 1), 0)
    with pytest.raises(ValueError):
        E.apply_symmetry(params, [np.array([0, 0, 1])], [np.ones(3)])
    with pytest.raises(ValueError):
        E.apply_symmetry(params, [np.arange(3)], [np.array([1.0, 0.0, 1.0])])
    with pytest.raises(ValueError):
        E.align(params, E.random_network((2, 4, 1), 0))
    assert not E.equivalent(params, E.random_network((2, 4, 1), 0))
    with pytest.raises(ValueError):
        E.equivalent(params, params, atol=-1.0)


def test_param_jacobian_matches_finite_differences():
    params = E.random_network((2, 3, 3, 1), 5)
    X = X2[:50]
    J = E.param_jacobian(params, X)
    flat = np.concatenate([np.concatenate([W.ravel(), b]) for W, b in params])

    def unflatten(v):
        out, k = [], 0
        for W, b in params:
            out.append((v[k:k + W.size].reshape(W.shape), v[k + W.size:k + W.size + b.size]))
            k += W.size + b.size
        return out

    h = 1e-6
    fd = np.stack([(E.forward(unflatten(flat + h * e), X) - E.forward(unflatten(flat - h * e), X))[:, 0] / (2 * h)
                   for e in np.eye(len(flat))], 1)
    assert np.abs(J - fd).max() < 1e-7
    with pytest.raises(ValueError):
        E.param_jacobian(E.random_network((2, 3, 2), 0), X)


def test_jacobian_rank_of_identifiable_net_hits_symmetry_bound(net3321):
    X = RNG.uniform(-1, 1, (2000, 3))
    rank, bound = E.jacobian_rank(net3321, X)
    assert rank == bound == 3 * 3 + 3 + 2 * 3 + 2 + 2 + 1 - 5


def test_identifiable_network_properties(net3321):
    assert E.widths_of(net3321) == [3, 3, 2, 1]
    assert E.check_transparent(net3321)
    net = E.identifiable_network((2, 2, 2, 1), 0)
    assert E.check_transparent(net)
    assert E.check_general(net)["general"]
    for bad in [(2, 3, 1), (3, 2, 3, 1), (2, 1, 1), (2,), "ab"]:
        with pytest.raises(ValueError):
            E.identifiable_network(bad, 0)
    with pytest.raises(ValueError):
        E.identifiable_network((2, 2, 1), 0, domain=(1, -1))
    with pytest.raises(ValueError):
        E.identifiable_network((2, 2, 1), 0.5)


def test_recover_is_exact_and_counts_queries(net3321):
    oracle = E.CountingOracle(lambda X: E.forward(net3321, X))
    got = E.recover(oracle, 3, seed=0)
    assert E.widths_of(got) == [3, 3, 2, 1]
    X = RNG.uniform(-1, 1, (20000, 3))
    assert np.abs(E.forward(got, X) - E.forward(net3321, X)).max() < 1e-6
    assert E.equivalent(net3321, got)
    assert 0 < oracle.n_queries < 20000


def test_recover_accepts_flat_output_and_2d_net():
    net = E.identifiable_network((2, 2, 2, 1), 1)
    got = E.recover(lambda X: E.forward(net, X)[:, 0], 2, seed=1)
    assert E.equivalent(net, got)


def test_recover_refuses_what_it_cannot_certify():
    theta, _, _ = E.counterexample("sign_flip_231")          # wider than the input: outside the theorem
    with pytest.raises(E.RecoveryError):
        E.recover(lambda X: E.forward(theta, X), 2, seed=0)
    with pytest.raises(ValueError):
        E.recover("not callable", 2)
    with pytest.raises(ValueError):
        E.recover(lambda X: X[:, :1], 0)
    with pytest.raises(ValueError):
        E.recover(lambda X: np.full(len(X), np.nan), 2)
    with pytest.raises(ValueError):
        E.recover(lambda X: np.zeros((3, 1)), 2)


def test_linear_regions_and_lemma21():
    net = E.identifiable_network((2, 2, 2, 1), 2)
    regions = E.linear_regions_2d(net)
    assert abs(sum(E._area(r.poly) for r in regions) - 4.0) < 1e-10
    for r in regions:                                    # local maps agree with the network inside
        c = r.poly.mean(0)
        np.testing.assert_allclose(r.out[0] @ c + r.out[1], E.forward(net, c[None])[0], atol=1e-12)
    lengths = E.lemma21_lengths(E.region_edges(net, regions))
    assert lengths["zero_and_fold"] > 1 and lengths["zero_not_fold"] < 1e-9 and lengths["fold_not_zero"] < 1e-9
    theta, _, _ = E.counterexample("non_transparent")
    lengths = E.lemma21_lengths(E.region_edges(theta, E.linear_regions_2d(theta)))
    assert lengths["zero_not_fold"] > 0.05
    with pytest.raises(ValueError):
        E.linear_regions_2d(E.random_network((3, 2, 1), 0))


def test_greedy_layers_recovers_full_lines_and_graph():
    net = E.identifiable_network((2, 2, 2, 2, 1), 3)
    regions = E.linear_regions_2d(net)
    res = E.greedy_layers(regions, E.region_edges(net, regions))
    assert res["unassigned_length"] < 1e-9
    order1 = [p for p in res["pieces"] if p["order"] == 1]
    assert sum(p["layer"] == 1 for p in order1) == 2         # both layer-1 lines are order 1
    assert all(p["order"] <= p["layer"] for p in res["pieces"])   # Lemma 2.3: order never exceeds layer
    for p, m in zip(res["pieces"], res["longest_path"]):     # Lemma 2.3: a path of length m below a
        assert p["layer"] <= 3 - m                            # piece puts it m layers before the last


def test_check_general_flags_degenerate_nets():
    net = E.random_network((2, 2, 2, 1), 7)
    assert E.check_general(net)["general"]
    zero = [(W.copy(), b.copy()) for W, b in net]
    zero[1][0][0, 1] = 0.0
    assert not E.check_general(zero)["cond2"]
    dup = [(W.copy(), b.copy()) for W, b in net]
    dup[0][0][1], dup[0][1][1] = dup[0][0][0], dup[0][1][0]
    assert not E.check_general(dup)["cond3"]
    tuned = [(np.array([[1.0, 0.2], [-0.3, 1.0]]), np.array([0.1, -0.2])),
             (np.array([[-1.0, -0.5], [0.7, -0.4]]), np.array([0.0, 0.3])), (np.array([[1.0, 1.0]]), np.zeros(1))]
    res = E.check_general(tuned)
    assert res["cond1"] is False and res["margin1"] < 1e-12
    with pytest.raises(ValueError):
        E.check_general(E.random_network((2, 8, 8, 1), 0))


@pytest.mark.parametrize("name", E.COUNTEREXAMPLES)
def test_counterexamples_equal_functions_not_equivalent(name):
    theta, eta, alpha = E.counterexample(name)
    assert np.abs(E.forward(theta, X2, alpha) - E.forward(eta, X2, alpha)).max() < 1e-12
    assert E.align(theta, eta)[2] > 1e-2
    assert not E.equivalent(theta, eta)
    if name in ("always_active", "dead_neuron"):
        rank, bound = E.jacobian_rank(theta, X2[:2000], alpha=alpha)
        assert rank < bound
    with pytest.raises(ValueError):
        E.counterexample("nope")


def test_paper_scale_configuration_runs_one_recovery():
    """The largest architecture of the chapter's paper-scale config, one construction + recovery."""
    net = E.identifiable_network((4, 4, 3, 3, 2, 1), 0)
    got = E.recover(lambda X: E.forward(net, X), 4, seed=0)
    assert E.equivalent(net, got)



def test_recover_never_returns_an_uncertified_network():
    """An extra fold near the edge of the box (outside the theorem's architecture) must be refused,
    although the network found on the bulk of the domain is plausible layer by layer."""
    net = E.identifiable_network((2, 2, 2, 1), 1)
    f = lambda X: E.forward(net, X)[:, 0] + 0.5 * np.maximum(X[:, 0] - 0.9, 0.0)
    with pytest.raises(E.RecoveryError):
        E.recover(f, 2, seed=0)


def test_identifiable_network_is_transparent_where_sampling_missed_a_region():
    # seed 17000 drew a (2,2,2,2,1) net whose all-off layer region no acceptance sample hit
    # (chapter 1's seed sweep, REPRO_SEED=17); the exact check over the linear regions now rejects it
    assert all(E.check_transparent(E.identifiable_network((2, 2, 2, 2, 1), s)) for s in range(17000, 17004))
