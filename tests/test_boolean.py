"""Unit tests of lib.boolean (Chapter 6: Boolean functions, swaps and small ReLU networks)."""

import itertools
import math

import numpy as np
import pytest
import torch

from lib import boolean as B


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


# ---- tables, ids, corners -------------------------------------------------------------------

def test_cube_and_ids_roundtrip():
    assert B.cube(2, pm=False).tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert B.cube(2).tolist() == [[-1, -1], [-1, 1], [1, -1], [1, 1]]
    table = B.truth_table(27030, 4)[0]
    assert "".join(map(str, table)) == "0110100110010110"  # Table 3.3: parity
    assert B.table_to_id(table) == 27030
    assert np.array_equal(table, B.parity_table(4))
    ids = np.array([0, 1, 1785, 7140, 65535])
    assert [B.table_to_id(t) for t in B.truth_table(ids, 4)] == ids.tolist()


@pytest.mark.parametrize("bad, match", [
    ([0, 1, 0], "power of two"),
    ([1], "power of two"),
    ([], "empty"),
    ([0, 2], "0 or 1"),
    ([0.0, float("nan")], "NaN"),
    (["a", "b"], "numbers"),
    ([[[0, 1]]], "1-D"),
    ([0] * 64, "at most n = 5"),
])
def test_swaps_rejects_bad_tables(bad, match):
    with pytest.raises(ValueError, match=match):
        B.swaps(bad)


def test_other_functions_reject_bad_input():
    with pytest.raises(ValueError):
        B.npn_class_id([0, 1, 1])
    with pytest.raises(ValueError):
        B.swaps_network([0, 3, 1, 0])
    with pytest.raises(ValueError):
        B.truth_table(16, 2)  # ids of 2-input functions are < 16
    with pytest.raises(ValueError):
        B.cube(0)
    with pytest.raises(ValueError):
        B.swaps([[0, 1], [1, 0]])  # a batch: use swaps_many
    with pytest.raises(ValueError):
        B.changes_along([0, 1, 1, 0], [1.0, np.nan])
    with pytest.raises(ValueError):
        B.swaps_network([0, 1, 1, 0], alpha=1.0)
    with pytest.raises(ValueError):
        B.parity_network(5, 2, 2)  # 5 > 2**2
    with pytest.raises(ValueError):
        B.sawtooth_network(0, 1)
    with pytest.raises(ValueError):
        B.train_boolean_nets([0, 1, 1, 0], 2, 1, 0.1, trials=0, epochs=1)
    with pytest.raises(ValueError):
        B.xor1d_local_optima(0)
    with pytest.raises(ValueError):
        B.relu_sign_pattern(np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError):
        B.network_output([(np.ones((1, 2)), np.zeros(1))], np.ones((3, 3)))


# ---- NPN classes and the swaps value -----------------------------------------------------------

def test_npn_class_counts_and_thesis_ids():
    # computed afresh here: a process that already filled the cache (a mutation runner forks one)
    # would otherwise never run the id-transform code behind it
    B.npn_class_ids_all.cache_clear()
    assert [len(B.npn_classes(n)) for n in (1, 2, 3, 4)] == [2, 4, 14, 222]  # OEIS A000370
    table_ids = [7140, 1716, 5804, 6042, 1641, 5805, 406, 5737, 278, 27030, 2022, 1713, 5786, 1717,
                 5774, 7905, 6038, 7128, 1785]
    for i in table_ids:  # every id printed in Table 3.3 / Fig. 3.2 is the minimum of its class
        assert B.npn_class_id(B.truth_table(i, 4)[0]) == i
    assert B.npn_class_id(B.truth_table(0b1001, 2)[0]) == 0b0110  # XNOR ~ XOR
    five = B.parity_table(5)
    assert B.npn_class_id(five) == B.npn_class_id(1 - five)


def test_order_type_counts():
    assert [len(B.order_types(n)[1]) for n in (1, 2, 3, 4)] == [1, 1, 2, 14]  # OEIS A009997


def test_swaps_all_histograms_and_table_3_1():
    B.swaps_all.cache_clear()  # computed afresh (see test_npn_class_counts_and_thesis_ids)
    hist = {n: np.bincount(B.swaps_all(n)).tolist() for n in (1, 2, 3, 4)}
    assert hist[1] == [2, 2] and hist[2] == [2, 12, 2] and hist[3] == [2, 102, 126, 26]
    assert hist[4] == [2, 1880, 14244, 30216, 19002, 192]
    assert [len(h) - 1 for h in hist.values()] == [1, 2, 3, 5]  # Table 3.1
    s4, ids = B.swaps_all(4), B.npn_class_ids_all(4)
    assert sorted(set(ids[s4 == 5].tolist())) == [1785, 7140]
    assert (s4 <= 1).sum() == 1882  # threshold functions, OEIS A000609
    # constant on NPN classes (Theorem 3.3.1)
    order = np.argsort(ids, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(ids[order]) > 0])
    assert np.array_equal(np.minimum.reduceat(s4[order], starts), np.maximum.reduceat(s4[order], starts))


def test_swaps_single_and_batch_agree_with_all():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2 ** 16, 40)
    assert np.array_equal(B.swaps_many(B.truth_table(ids, 4)), B.swaps_all(4)[ids])
    assert B.swaps(B.truth_table(27030, 4)[0]) == 4
    for n in (1, 2, 3, 4, 5):
        assert B.swaps(B.parity_table(n)) == n


def test_branch_and_bound_matches_matrix_product():
    for n in (2, 3):
        ids = np.arange(2 ** (2 ** n))
        tables = B.truth_table(ids, n)
        assert [B.swaps_branch_and_bound(t) for t in tables] == B.swaps_all(n).tolist()
    rng = np.random.default_rng(1)
    tables5 = rng.integers(0, 2, (12, 32)).astype(np.uint8)
    assert [B.swaps(t) for t in tables5] == B.swaps_many(tables5).tolist()
    with pytest.raises(ValueError):
        B.swaps_branch_and_bound([0, 1])
    with pytest.raises(ValueError):
        B.swaps_branch_and_bound(B.parity_table(3), chunk=0)


def test_branch_and_bound_symmetric_and_hard_functions():
    """Functions with many symmetries (each distinct transform is kept once) and the largest swaps
    values known at n = 5 (the most chambers to count) against the plain matrix product."""
    weight = B.cube(5, pm=False).sum(1)
    symmetric = np.array([(np.arange(6)[None, :] == weight[:, None]) @ ((k >> np.arange(6)) & 1)
                          for k in range(64)], dtype=np.uint8)  # f depends on the number of ones only
    hard = B.truth_table([int(s, 2) for s in ("11001101001010100101100010111000",
                                              "00111011010000010001000111010010",
                                              "00110111001010100110010111110000")], 5)
    tables = np.concatenate([symmetric, hard])
    expected = B.swaps_many(tables)
    assert [B.swaps_branch_and_bound(t) for t in tables] == expected.tolist()
    assert [B.swaps_branch_and_bound(t, chunk=1) for t in hard] == expected[-3:].tolist()
    assert expected[-3:].tolist() == [8, 8, 9] and B.swaps_branch_and_bound(B.parity_table(5)) == 5
    table4 = B.truth_table(np.random.default_rng(2).integers(0, 2 ** 16, 300), 4)
    assert [B.swaps_branch_and_bound(t) for t in table4] == B.swaps_all(4)[[B.table_to_id(t) for t in table4]].tolist()
    classes = B.truth_table(B.npn_classes(4), 4)  # one chamber at a time: the early stop within a level
    assert [B.swaps_branch_and_bound(t, chunk=1) for t in classes] == B.swaps_all(4)[B.npn_classes(4)].tolist()


def test_climb_max_swaps_small():
    table, value, finals = B.climb_max_swaps(3, restarts=3, seed=0, progress=False)
    assert value == B.swaps(table) == 3 and finals.max() == 3  # the n = 3 maximum is easy to reach
    with pytest.raises(ValueError):
        B.climb_max_swaps(3, restarts=0)


def test_best_projection_realises_swaps():
    for i in [1, 278, 1785, 7140, 27030, 854]:
        table = B.truth_table(i, 4)[0]
        w = B.best_projection(table)
        assert B.changes_along(table, w) == B.swaps(table)
    assert B.changes_along([0, 1, 1, 0], [1.0, 1.0]) == 2.0
    assert B.changes_along([0, 1, 0, 0], [1.0, 1.0]) == math.inf  # corners 01 and 10 tie across classes


def test_thesis_case_list_misses_chambers():
    assert len(B.thesis_case_weights(4)) == 2 * 2 * 4 * 6  # 2i - 2 cases for w_i
    for i, exact in [(414, 3), (1782, 4)]:
        table = B.truth_table(i, 4)[0]
        assert B.swaps(table) == exact
        assert B.thesis_swaps(table) == exact + 1
    assert B.thesis_swaps(B.truth_table(1785, 4)[0]) == 5


def test_fourier_quantities():
    par = B.parity_table(4)
    assert np.isclose((B.fourier(par) ** 2).sum(), 1.0)  # Parseval with the 2^-n normalisation
    assert B.degree(par)[0] == 4 and np.isclose(B.influence(par)[0], 4.0)
    assert np.isclose(B.fourier_entropy(par)[0], 0.0)
    assert np.isclose(B.fourier_entropy(B.truth_table(854, 4))[0], 4.0)  # bent
    assert np.allclose(B.influence(B.truth_table([1785, 7140], 4)), 2.5)


# ---- constructions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_swaps_network_classifies_every_class(alpha):
    X = B.cube(4)
    for table in B.truth_table(B.npn_classes(4), 4):
        net = B.swaps_network(table, alpha)
        assert net[0][0].shape[0] == B.swaps(table)
        out = B.network_output(net, X, alpha)
        assert np.min(np.where(table == 1, out, -out)) > 1e-6


def test_swaps_network_n5_parity():
    table = B.parity_table(5)
    net = B.swaps_network(table, 0.1)
    out = B.network_output(net, B.cube(5), 0.1)
    assert net[0][0].shape == (5, 5) and np.min(np.where(table == 1, out, -out)) > 1e-6


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_sawtooth_and_parity_networks(alpha):
    net = B.sawtooth_network(3, 2, alpha)
    x = np.arange(10)[:, None] / 9  # the tips j/9 of the 3**2 = 9 teeth
    assert np.allclose(B.network_output(net, x, alpha), np.where(np.arange(10) % 2, 0.5, -0.5))
    for depth in (1, 2, 3):
        for n in range(1, 2 ** depth + 1):
            out = B.network_output(B.parity_network(n, 2, depth, alpha), B.cube(n), alpha)
            assert np.min(np.where(B.parity_table(n) == 1, out, -out)) > 1e-6


# ---- training ---------------------------------------------------------------------------------------

def test_stacked_mlp_gradient_matches_autograd():
    model = B.StackedMLP([4, 3, 2, 1], 5, 0.1, seed=0)
    X = torch.tensor(B.cube(4), dtype=torch.float32)
    Y = (torch.rand(16, 5, generator=torch.Generator().manual_seed(1)) > 0.5).float()
    out, zs = model.forward(X, keep=True)
    model.backward(X, zs, (torch.sigmoid(out) - Y) / 16)
    theta = model.theta.clone().requires_grad_()
    model.params = [v.view(p.shape) for v, p in zip(theta.split([p.numel() for p in model.params]), model.params)]
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model.forward(X), Y, reduction="none")
    loss.mean(0).sum().backward()
    assert torch.allclose(theta.grad, model.grad, atol=1e-6)


def test_train_boolean_nets_learns_and_matches_adam():
    tables = B.truth_table([1, 27030], 4)
    ok = B.train_boolean_nets(tables, 4, 1, 0.1, trials=4, epochs=300, seed=0, progress=False)
    assert ok.shape == (2, 4) and ok[0].all()  # AND-like class 1 is linearly separable
    theta, grad = torch.randn(10), torch.randn(10)
    ref = theta.clone().requires_grad_()
    opt = torch.optim.Adam([ref], lr=0.025)
    state = B._adam_state(theta)
    for _ in range(3):
        ref.grad = grad.clone()
        opt.step()
        B._adam_step(theta, grad, state, 0.025)
    assert torch.allclose(theta, ref.detach(), atol=1e-6)


def test_dropping_solved_nets_keeps_results():
    tables = B.truth_table(B.npn_classes(4)[:12], 4)
    kept = B.train_boolean_nets(tables, 3, 1, 0.1, trials=3, epochs=150, seed=1, progress=False,
                                compact_every=10 ** 6)
    dropped = B.train_boolean_nets(tables, 3, 1, 0.1, trials=3, epochs=150, seed=1, progress=False,
                                   compact_every=7)
    assert np.array_equal(kept, dropped)
    with pytest.raises(ValueError):
        B.train_boolean_nets(tables, 3, 1, 0.1, trials=3, epochs=1, compact_every=0)


def test_paper_scale_one_step():
    """One epoch of the paper's largest §3.4.2 shape (width 10, depth 5) on all 222 classes."""
    tables = B.truth_table(B.npn_classes(4), 4)
    ok = B.train_boolean_nets(tables, 10, 5, 0.1, trials=10, epochs=1, seed=0, progress=False)
    assert ok.shape == (222, 10) and ok.dtype == bool


def test_xor1d_local_optima_levels():
    losses, params = B.xor1d_local_optima(200, steps=500, lr=0.1, seed=0)
    levels = np.array([0.0, 8 / 3, 4.0])
    assert np.abs(losses[:, None] - levels).min(1).max() < 0.05
    pattern = B.relu_sign_pattern(params["w"], params["b"])
    assert pattern.shape == (200,) and all(len(p) == 6 for p in pattern)


def test_subnetworks_keep_the_parents_weights():
    parent = B.StackedMLP([4, 5, 1], 3, 0.1, seed=0)
    X = torch.tensor(B.cube(4), dtype=torch.float32)
    whole = B.subnetworks(parent, [tuple(range(5))], [2, 0])
    assert torch.allclose(whole.forward(X), parent.forward(X)[:, [2, 0]], atol=1e-6)
    child = B.subnetworks(parent, [(0, 3), (1, 4)], [1])
    silenced = B.StackedMLP([4, 5, 1], 3, 0.1, seed=0)
    silenced.params[2][[1, 2, 4]] = 0.0  # keep units 0 and 3 only
    assert torch.allclose(child.forward(X)[:, 0], silenced.forward(X)[:, 1], atol=1e-6)
    with pytest.raises(ValueError):
        B.subnetworks(parent, [(0, 7)], [0])


def test_prune_and_finetune_shapes():
    res = B.prune_and_finetune(B.parity_table(2), 4, 0.1, parents=4, epochs=300, seed=0, max_width=2,
                               progress=False)
    used = res["parents_used"]
    assert len(used) >= 1 and res["parent_solved"].shape == (4,)
    assert res["solved"][2].shape == (len(used), 6) and res["curves"][2].shape == (300, len(used), 6)
    assert not res["solved"][1].any()  # one unit cannot compute XOR
    with pytest.raises(ValueError):
        B.prune_and_finetune(B.parity_table(2), 4, 0.1, parents=4, epochs=10, max_width=5)


# ---- device (issue 22) ----------------------------------------------------------------------------

def test_trainers_give_identical_numbers_for_every_cpu_choice(monkeypatch):
    """Issue 22: REPRO_DEVICE=cpu and auto, and an explicit CPU device, give the same numbers on a
    CPU-only machine, and the results come back as numpy arrays."""
    tables = B.truth_table(B.npn_classes(3)[:6], 3)
    runs = []
    for env, arg in (("auto", None), ("cpu", None), ("auto", "cpu"), ("cpu", torch.device("cpu"))):
        monkeypatch.setenv("REPRO_DEVICE", env)
        ok, acc = B.train_boolean_nets(tables, 3, 1, 0.1, 3, 60, seed=2, progress=False, with_accuracy=True,
                                       device=arg)
        res = B.prune_and_finetune(B.parity_table(2), 4, 0.1, 3, 80, seed=1, max_width=2, progress=False,
                                   device=arg)
        runs.append((ok, acc, res["parent_solved"], res["solved"][2], res["curves"][2]))
    assert 0 < runs[0][1].mean() < 1 and runs[0][4].std() > 0  # the runs compared are not trivial
    for run in runs[1:]:
        for first, this in zip(runs[0], run):
            assert isinstance(this, np.ndarray) and np.array_equal(first, this)


def test_trainers_build_their_nets_on_the_device_lib_scale_resolves(monkeypatch):
    """The trainers resolve ``device`` once (None: REPRO_DEVICE) and build every net on the answer;
    ``cpu:0`` stands in for a second device (a distinct torch.device that a CPU-only machine has)."""
    calls = []
    monkeypatch.setattr(B, "as_device", lambda device=None, name="device": calls.append(device) or torch.device("cpu", 0))
    B.train_boolean_nets(B.parity_table(2)[None], 2, 1, 0.1, 2, 3, progress=False)
    assert calls == [None, torch.device("cpu", 0)]
    calls.clear()
    B.prune_and_finetune(B.parity_table(2), 3, 0.1, 2, 200, seed=0, max_width=1, progress=False, device="cuda:1")
    assert calls[:2] == ["cuda:1", torch.device("cpu", 0)]


def test_stacked_nets_keep_their_device(monkeypatch):
    """Weights drawn on the CPU land on ``device``; sub-networks are built where their parent lives
    (the meta device stands in for a GPU: a CPU tensor copied into it, or mixed with it, fails)."""
    cpu = B.StackedMLP([3, 4, 1], 5, 0.1, 0)
    assert cpu.device == torch.device("cpu") and cpu.grad.device == cpu.device
    with pytest.raises(ValueError, match="^device must be one of"):
        B.StackedMLP([3, 4, 1], 5, 0.1, 0, device="gpu")
    monkeypatch.setattr(B, "as_device", lambda device=None, name="device": torch.device(device))  # admit meta
    meta = B.StackedMLP([3, 4, 1], 5, 0.1, 0, device="meta")
    assert {p.device.type for p in meta.params + meta.grads} == {"meta"} and meta.B == 5
    child = B.subnetworks(meta, [(0, 1), (2, 3)], [0, 4])
    assert child.device.type == "meta" and child.B == 4 and child.params[0].shape == (3, 2, 4)
    X = torch.ones(8, 3, device="meta")
    zs = [torch.ones(8, 4, 5, device="meta"), torch.ones(8, 1, 5, device="meta")]
    meta.backward(X, zs, torch.ones(8, 5, device="meta"))  # the hand-written gradient runs on the device
    assert meta.grad.device.type == "meta"


def test_bad_device_is_refused_before_any_training(monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("trained before the device was checked")

    monkeypatch.setattr(B, "_fit", no_training)
    with pytest.raises(ValueError, match="^device must be one of"):
        B.train_boolean_nets(B.parity_table(2)[None], 2, 1, 0.1, 2, 3, progress=False, device="gpu")
    with pytest.raises(ValueError, match="^device must be one of"):
        B.prune_and_finetune(B.parity_table(2), 3, 0.1, 2, 3, progress=False, device="gpu")


def test_stacked_mlp_initialisations():
    # He-normal: std sqrt(2 / fan_in); "torch": uniform on +-1/sqrt(fan_in) (std 1/sqrt(3 fan_in))
    he, uni = B.StackedMLP([4, 8, 1], 2000, 0.1, 0), B.StackedMLP([4, 8, 1], 2000, 0.1, 0, init="torch")
    assert float(he.params[0].std()) == pytest.approx(np.sqrt(2 / 4), rel=0.02)
    W = uni.params[0]
    assert float(W.abs().max()) <= 0.5 and float(W.abs().max()) > 0.49
    assert float(W.std()) == pytest.approx(1 / np.sqrt(12), rel=0.02)
    # biases (both inits) uniform on +-1/sqrt(fan_in): fan-in 4 in layer 1, 8 in layer 2
    for model in (he, uni):
        for b, fan_in in ((model.params[1], 4), (model.params[3], 8)):
            assert 0.98 / np.sqrt(fan_in) < float(b.abs().max()) <= 1 / np.sqrt(fan_in)
            assert float(b.std()) == pytest.approx(1 / np.sqrt(3 * fan_in), rel=0.05)
            assert abs(float(b.mean())) < 0.1 / np.sqrt(fan_in)
    assert float(he.params[2].std()) == pytest.approx(np.sqrt(2 / 8), rel=0.05)   # He: fan-in 8 in layer 2
    assert float(uni.params[2].abs().max()) <= 1 / np.sqrt(8) and float(uni.params[2].abs().max()) > 0.98 / np.sqrt(8)
    with pytest.raises(ValueError, match="^init "):
        B.StackedMLP([4, 8, 1], 2, 0.1, 0, init="xavier")


# ---- Table 3.2's sign patterns by hand; every error message names its argument -------------------

def test_relu_sign_pattern_by_hand():
    # net 0: unit 0 (w 1, b 0.5): b +, b+w 1.5 +, b-w -0.5 -; unit 1 (w 0.5, b -0.2): -0.2 -, 0.3 +, -0.7 -
    # net 1: unit 0 (w -1, b 0.1): +, -0.9 -, 1.1 +; unit 1 (w 2, b 0.3): +, 2.3 +, -1.7 -
    w = np.array([[1.0, -1.0], [0.5, 2.0]])
    b = np.array([[0.5, 0.1], [-0.2, 0.3]])
    assert B.relu_sign_pattern(w, b).tolist() == ["++--+-", "+-+++-"]
    # a zero pre-activation counts as active (>= 0)
    assert B.relu_sign_pattern(np.zeros((2, 1)), np.zeros((2, 1))).tolist() == ["++++++"]
    assert B.relu_sign_pattern(np.ones((2, 1)), -np.ones((2, 1))).tolist() == ["-+--+-"]
    # units with different biases, so that mixing up the units' b would show:
    # net 0: unit 0 (w -0.7, b 0.5): +, -0.2 -, 1.2 +; unit 1 (w 2, b 1): +, 3 +, -1 -
    # net 1: unit 0 (w 0.7, b 0.5): +, 1.2 +, -0.2 -; unit 1 (w 0.1, b 1): +, 1.1 +, 0.9 +
    w = np.array([[-0.7, 0.7], [2.0, 0.1]])
    b = np.array([[0.5, 0.5], [1.0, 1.0]])
    assert B.relu_sign_pattern(w, b).tolist() == ["+-+++-", "++-+++"]


_tab = np.array([0, 1, 1, 0])
_B_BAD = [
    (lambda: B.check_tables(_tab, max_n=0), r"^max_n must be"),
    (lambda: B.check_tables(np.zeros(6)), r"^tables \(truth table\) must have a length that is a power of two 2\*\*n with n >= 1, got 6$"),
    (lambda: B.check_tables(np.zeros(1)), r"^tables \(truth table\) must have a length that is a power of two 2\*\*n with n >= 1, got 1$"),
    (lambda: B.check_tables(np.zeros(8), max_n=2), r"^tables \(truth table\): truth tables of n = 3 inputs are not supported here \(at most n = 2\)$"),
    (lambda: B.check_tables(np.array([0.0, np.nan]), name="t"), r"^t \(truth table\) contains NaN$"),
    (lambda: B.check_tables(np.array([0, 2])), r"^tables \(truth table\) must hold only the values 0 or 1$"),
    (lambda: B.check_tables("ab"), r"^tables \(truth table\) must be"),
    (lambda: B.cube(0), r"^n \(the number of inputs\) must be"),
    (lambda: B.table_to_id(np.zeros((2, 4))), r"^table_to_id takes one truth table$"),
    (lambda: B.truth_table([], 2), r"^ids must be non-empty"),
    (lambda: B.truth_table([0.5], 2), r"^ids must be a non-empty integer array, got"),
    (lambda: B.truth_table([16], 2), r"^ids must lie in \[0, 2\*\*4\) for n = 2$"),
    (lambda: B.truth_table([-1], 2), r"^ids must lie in \[0, 2\*\*4\) for n = 2$"),
    (lambda: B.npn_class_id(np.zeros((2, 4))), r"^npn_class_id takes one truth table; use npn_class_ids_all"),
    (lambda: B.swaps_many(np.zeros((2, 4)), batch=0), r"^batch must be"),
    (lambda: B.swaps(np.zeros((2, 4))), r"^swaps takes one truth table; use swaps_many for a batch$"),
    (lambda: B.swaps_branch_and_bound(np.array([0, 1])), r"^swaps_branch_and_bound takes one truth table of n >= 2 inputs$"),
    (lambda: B.swaps_branch_and_bound(_tab, chunk=0), r"^chunk must be"),
    (lambda: B.best_projection(np.zeros((2, 4))), r"^best_projection takes one truth table$"),
    (lambda: B.changes_along(_tab, [1.0]), r"^w \(the direction\) must be an array of shape \(2,\)"),
    (lambda: B.changes_along(_tab, [1.0, np.nan]), r"^direction w contains NaN or infinite values$"),
    (lambda: B.changes_along(np.zeros((2, 4)), [1.0, 1.0]), r"^need one truth table and a direction of shape \(2,\), got \(2, 4\), \(2,\)$"),
    (lambda: B.network_output("ab", np.ones((1, 2))), r"^params must be"),
    (lambda: B.network_output([3], np.ones((1, 2))), r"^params\[0\] must be a \(W, b\) pair, got 3$"),
    (lambda: B.network_output([(np.ones(2), np.zeros(1))], np.ones((1, 2))), r"^params\[0\] W must be an array with 2 dimensions"),
    (lambda: B.network_output([(np.ones((1, 2)), np.zeros(2))], np.ones((1, 2))), r"^params\[0\] b must be an array of shape \(1,\)"),
    (lambda: B.network_output([(np.ones((3, 2)), np.zeros(3)), (np.ones((1, 2)), np.zeros(1))], np.ones((1, 2))),
     r"^params\[1\] W has 2 columns but layer 0 has 3"),
    (lambda: B.network_output([(np.ones((1, 2)), np.zeros(1))], np.ones((1, 3))), r"^X must be an array of shape \(n, 2\)"),
    (lambda: B.network_output([(np.ones((1, 2)), np.zeros(1))], np.ones((1, 2)), alpha=1.0), r"^alpha \(the leak\) must be"),
    (lambda: B.interpolation_slopes(np.ones((2, 2)), 0.0), r"^slopes must be an array with 1 dimensions"),
    (lambda: B.swaps_network(np.zeros((2, 4))), r"^swaps_network takes one truth table$"),
    (lambda: B.sawtooth_network(0, 2), r"^width must be a positive int, got 0$"),
    (lambda: B.sawtooth_network(2, 1.5), r"^depth must be a positive int, got 1.5$"),
    (lambda: B.sawtooth_network(True, 2), r"^width must be a positive int, got True$"),
    (lambda: B.parity_network(5, 2, 2), r"^n must be an int in \[1, width\*\*depth = 4\], got 5$"),
    (lambda: B.parity_network(0, 2, 2), r"^n must be an int in \[1, width\*\*depth = 4\], got 0$"),
    (lambda: B.parity_network(True, 2, 2), r"^n must be an int in \[1, width\*\*depth = 4\], got True$"),
    (lambda: B.StackedMLP([2, 3, 1], 2, 0.1, 0, init="x"), r"^init must be one of"),
    (lambda: B.StackedMLP("ab", 2, 0.1, 0), r"^widths must be"),
    (lambda: B.StackedMLP([2, 3, 2], 2, 0.1, 0), r"^widths must be >= 2 positive ints ending in 1, got \[2, 3, 2\]$"),
    (lambda: B.StackedMLP([1], 2, 0.1, 0), r"^widths must be >= 2 positive ints ending in 1, got \[1\]$"),
    (lambda: B.StackedMLP([2, 0, 1], 2, 0.1, 0), r"^widths must be >= 2 positive ints ending in 1, got \[2, 0, 1\]$"),
    (lambda: B.StackedMLP([2, 3, 1], 0, 0.1, 0), r"^n_nets must be"),
    (lambda: B.StackedMLP([2, 3, 1], 2, 0.1, -1), r"^seed must be"),
    (lambda: B.StackedMLP([2, 3, 1], 2, 0.1, 0).forward(torch.ones(4, 3)), r"^X must be an array of shape \(n, 2\)"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1, 0.1, 2, 3, lr=0.0, progress=False), r"^lr must be"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1, 0.1, 2, 3, seed=-1, progress=False), r"^seed must be"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1, 0.1, 2, 3, compact_every=0, progress=False),
     r"^compact_every must be an int >= 1, got 0$"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1, 0.1, 0, 3, progress=False), r"^trials must be an int >= 1, got 0$"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1, 0.1, 2, 0, progress=False), r"^epochs must be an int >= 1, got 0$"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1, 0.1, 2, 2.5, progress=False), r"^epochs must be an int, got 2.5$"),
    (lambda: B.train_boolean_nets(_tab[None], 0, 1, 0.1, 2, 3, progress=False), r"^width must be an int >= 1, got 0$"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 0, 0.1, 2, 3, progress=False), r"^depth must be an int >= 1, got 0$"),
    (lambda: B.train_boolean_nets(_tab[None], 3, 1.5, 0.1, 2, 3, progress=False), r"^depth must be an int, got 1.5$"),
    (lambda: B.subnetworks("m", [(0,)], [0]), r"^model must be a StackedMLP"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 3, 1], 2, 0.1, 0), [(0,)], [0]), r"^subnetworks needs one-hidden-layer nets$"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 1], 2, 0.1, 0), [0], [0]), r"^subsets \(unit tuples of one size\) must be an array with 2"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 1], 2, 0.1, 0), [(0, 3)], [0]), r"^subsets: unit index out of range \[0, 3\)$"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 1], 2, 0.1, 0), [(0, -1)], [0]), r"^subsets: unit index out of range \[0, 3\)$"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 1], 2, 0.1, 0), [(0,)], [2]), r"^nets: net index out of range \[0, 2\)$"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 1], 2, 0.1, 0), [(0,)], [-1]), r"^nets: net index out of range \[0, 2\)$"),
    (lambda: B.subnetworks(B.StackedMLP([2, 3, 1], 2, 0.1, 0), [(0,)], [[0]]), r"^nets \(net indices\) must be an array with 1"),
    (lambda: B.prune_and_finetune(np.zeros((2, 4)), 3, 0.1, 2, 3, progress=False), r"^prune_and_finetune takes one truth table$"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2, 3, lr=0.0, progress=False), r"^lr must be"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2, 3, seed=-1, progress=False), r"^seed must be"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2, 3, max_width=4, progress=False), r"^max_width must be an int >= 1 and <= 3, got 4$"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2, 3, max_width=0, progress=False), r"^max_width must be an int >= 1 and <= 3, got 0$"),
    (lambda: B.prune_and_finetune(_tab, 2.5, 0.1, 2, 3, max_width=1, progress=False), r"^width must be an int, got 2.5$"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 0, 3, progress=False), r"^parents must be an int >= 1, got 0$"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2, 0, progress=False), r"^epochs must be an int >= 1, got 0$"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2.5, 3, progress=False), r"^parents must be an int, got 2.5$"),
    (lambda: B.prune_and_finetune(_tab, 3, 0.1, 2, 3, finetune_epochs=0, progress=False), r"^finetune_epochs must be an int >= 1, got 0$"),
    (lambda: B.xor1d_local_optima(0), r"^n_nets must be an int >= 1, got 0$"),
    (lambda: B.xor1d_local_optima(2, steps=0), r"^steps must be an int >= 1, got 0$"),
    (lambda: B.xor1d_local_optima(2, steps=2.5), r"^steps must be an int, got 2.5$"),
    (lambda: B.xor1d_local_optima(2, lr=0.0), r"^lr must be"),
    (lambda: B.xor1d_local_optima(2, seed=-1), r"^seed must be"),
    (lambda: B.relu_sign_pattern(np.zeros((3, 2)), np.zeros((3, 2))), r"^w must be an array of shape \(2, n\)"),
    (lambda: B.relu_sign_pattern(np.zeros((2, 2)), np.zeros((2, 3))), r"^b must be an array of shape \(2, 2\)"),
    (lambda: B.climb_max_swaps(2, 0), r"^restarts must be an int >= 1, got 0$"),
    (lambda: B.climb_max_swaps(2, True), r"^restarts must be an int, got True$"),
    (lambda: B.climb_max_swaps(2, 1, seed=-1), r"^seed must be"),
    (lambda: B.climb_max_swaps(2, 1, max_steps=-1), r"^max_steps must be"),
    (lambda: B.climb_max_swaps(2, 1, sideways=-1), r"^sideways must be"),
    (lambda: B.climb_max_swaps(0, 1), r"^n \(the number of inputs\) must be"),
]


@pytest.mark.parametrize("i", range(len(_B_BAD)))
def test_error_messages_name_the_argument(i):
    call, pattern = _B_BAD[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


# ---- independent computations: brute force over small cubes, a second algorithm, hand-worked cases ----

def _brute_fourier(table):
    """fhat(S) = 2^-n sum_x (-1)^f(x) prod_{i in S} x_i over x in {-1,1}^n, S as a bit mask (x1 = top bit)."""
    n = int(np.log2(len(table)))
    corners = list(itertools.product((-1, 1), repeat=n))                    # table order: x1 most significant
    out = []
    for S in itertools.product((0, 1), repeat=n):
        out.append(sum((-1) ** int(f) * math.prod(x for x, s in zip(xs, S) if s) for f, xs in zip(table, corners)) / 2 ** n)
    return np.array(out)


def test_fourier_quantities_against_brute_force():
    rng = np.random.default_rng(5)
    tables = np.vstack([rng.integers(0, 2, (6, 8)), [[0, 0, 0, 1, 0, 1, 1, 1]]]).astype(np.uint8)  # last: majority
    coef = B.fourier(tables)
    for t, c in zip(tables, coef):
        brute = _brute_fourier(t)
        np.testing.assert_allclose(c, brute, atol=1e-12)
        sizes = np.array([bin(S).count("1") for S in range(8)])
        assert B.degree(t)[0] == max(sizes[np.abs(brute) > 1e-12], default=0)
        # influence by its combinatorial definition: sum_i P[f(x) != f(x with bit i flipped)]
        inf = sum(np.mean([t[k] != t[k ^ (1 << i)] for k in range(8)]) for i in range(3))
        assert B.influence(t)[0] == pytest.approx(inf, abs=1e-12)
        p = brute ** 2
        assert B.fourier_entropy(t)[0] == pytest.approx(-sum(q * math.log2(q) for q in p if q > 0), abs=1e-12)
    np.testing.assert_allclose(coef[-1], [0, -0.5, -0.5, 0, -0.5, 0, 0, 0.5], atol=1e-15)  # majority by hand
    assert B.fourier_entropy(tables[-1])[0] == pytest.approx(2.0) and B.influence(tables[-1])[0] == pytest.approx(1.5)
    assert B.fourier(np.zeros(4, np.uint8)).tolist() == [1.0, 0.0, 0.0, 0.0] and B.degree([0, 0, 0, 0])[0] == 0
    assert B.degree([0, 0, 1, 1])[0] == 1 and B.fourier_entropy([0, 0, 1, 1])[0] == 0.0  # a dictator
    assert B.fourier(tables).shape == (7, 8) and B.fourier(tables[0]).shape == (8,)


def test_npn_class_ids_against_brute_force():
    """The byte-lookup transform of ids (n <= 4) and the n = 5 branch against the definition: the
    smallest id over every input negation/permutation of f and of 1 - f."""
    def brute(table):
        n = int(np.log2(len(table)))
        out = []
        for perm in itertools.permutations(range(n)):
            for sign in itertools.product((1, -1), repeat=n):
                X = B.cube(n)
                TX = X[:, perm] * np.array(sign)
                g = table[(TX > 0) @ (1 << np.arange(n - 1, -1, -1))]          # g(x) = f(T x)
                out += [int("".join(map(str, g)), 2), int("".join(map(str, 1 - g)), 2)]
        return min(out)

    rng = np.random.default_rng(3)
    for n, count in ((2, 16), (3, 12), (4, 3)):
        ids = np.arange(16) if n == 2 else rng.integers(0, 2 ** (2 ** n), count)
        for i in ids:
            assert B.npn_class_ids_all(n)[i] == brute(B.truth_table(int(i), n)[0])
    for t in rng.integers(0, 2, (1, 32)).astype(np.uint8):
        assert B.npn_class_id(t) == brute(t)
    and5 = B.cube(5, pm=False).all(1).astype(np.uint8)                         # one 1 at corner 11111
    assert B.npn_class_id(and5) == 1 and B.npn_class_id(1 - and5) == 1         # NAND: only via the output negation
    with pytest.raises(ValueError, match=r"^table \(truth table\) must hold only the values 0 or 1$"):
        B.npn_class_id([0, 1, 2, 0])
    assert B.npn_classes(2).tolist() == [0, 1, 3, 6]                          # 0, AND, x1, XOR
    maps = B.npn_transforms(3)
    assert maps.shape == (48, 8) and all(sorted(r) == list(range(8)) for r in maps)


def test_order_types_weights_realise_their_orders():
    assert B.order_types(2)[1].tolist() == [[0, 2, 1, 3]]                      # w1 < w2: 00, 10, 01, 11
    W, orders = B.order_types(3)
    assert W.tolist() == [[1, 2, 4], [2, 3, 4]] and orders.tolist() == [[0, 4, 2, 6, 1, 5, 3, 7], [0, 4, 2, 1, 6, 5, 3, 7]]
    for n in (3, 4):
        W, orders = B.order_types(n)
        sums = W @ B.cube(n, pm=False).T
        assert (W > 0).all() and (np.diff(W, axis=1) > 0).all()
        assert all(len(set(s)) == 2 ** n for s in sums)                        # generic
        assert np.array_equal(np.argsort(sums, axis=1), orders)
        assert len({tuple(o) for o in orders}) == len(orders)


def test_interpolation_slopes_give_the_slopes():
    """sum_j a_j leaky(x - y_j) has slope s_i between knots i and i+1 (finite differences of the net)."""
    rng = np.random.default_rng(4)
    y = np.array([-1.0, 0.0, 0.5, 2.0])
    s = rng.normal(size=4)
    for alpha in (0.0, 0.3):
        a = B.interpolation_slopes(s, alpha)
        net = [(np.ones((4, 1)), -y), (a[None, :], np.zeros(1))]
        x = np.array([-0.6, -0.4, 0.2, 0.3, 1.0, 1.5, 3.0, 4.0])[:, None]   # two points per segment
        out = B.network_output(net, x, alpha)
        np.testing.assert_allclose((out[1::2] - out[::2]) / (x[1::2, 0] - x[::2, 0]), s, atol=1e-12)
        left = B.network_output(net, np.array([[-3.0], [-2.0]]), alpha)           # left of every knot
        assert left[1] - left[0] == pytest.approx(alpha * a.sum(), abs=1e-12)


def test_network_output_by_hand_and_width_zero():
    net = [(np.array([[1.0, -1.0], [2.0, 0.0]]), np.array([0.0, -1.0])), (np.array([[1.0, 3.0]]), np.array([0.5]))]
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    # x=(1,0): z=(1, 1) -> 1 + 3 + .5; x=(0,1): z=(-1, -1) -> relu 0, leaky 0.1*(-1 - 3)
    np.testing.assert_allclose(B.network_output(net, X), [4.5, 0.5])
    np.testing.assert_allclose(B.network_output(net, X, 0.1), [4.5, 0.5 - 0.4])
    const = B.swaps_network([1, 1, 1, 1])
    assert B.network_output(const, B.cube(2)).tolist() == [1.0] * 4
    assert B.network_output(B.swaps_network([0, 0, 0, 0]), B.cube(2)).tolist() == [-1.0] * 4


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_swaps_network_crosses_zero_halfway_between_runs(alpha):
    """Along the projection the net is piecewise linear in p = w.x and changes sign exactly swaps(f)
    times, at the midpoints between adjacent corners of different classes (Thm 3.3.2's construction)."""
    for i, n in [(1785, 4), (278, 4), (27030, 4), (105, 3), (23, 3)]:
        table = B.truth_table(i, n)[0]
        net = B.swaps_network(table, alpha)
        w = net[0][0][0]
        proj = np.sort(B.cube(n) @ w)
        lab = table[np.argsort(B.cube(n) @ w, kind="stable")]
        change = np.flatnonzero(lab[1:] != lab[:-1])
        mids = (proj[change] + proj[change + 1]) / 2
        on_line = lambda t: np.asarray(t, float)[:, None] * w[None, :] / (w @ w)  # noqa: E731  points with w.x = t
        np.testing.assert_allclose(B.network_output(net, on_line(mids), alpha), 0.0, atol=1e-9)
        t = np.linspace(proj[0], proj[-1], 4001)
        signs = np.sign(B.network_output(net, on_line(t), alpha))
        signs = signs[signs != 0]
        assert (signs[1:] != signs[:-1]).sum() == B.swaps(table) == len(net[0][1])
        out = B.network_output(net, B.cube(n), alpha)
        assert np.all(np.where(table == 1, out, -out) > 0)


def test_thesis_case_weights_n3_by_hand():
    # w1 in {0, 1}; w2 in {w1, w1 + 1}... (cases 1 and 5 for i = 2), then the four cases for i = 3
    W = B.thesis_case_weights(3)
    assert W.tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 1, 1], [0, 1, 2], [0, 1, 1], [0, 1, 1],
                          [1, 1, 1], [1, 1, 3], [1, 1, 2], [1, 1, 1.5], [1, 2, 2], [1, 2, 4], [1, 2, 3], [1, 2, 2.5]]
    assert len(B.thesis_case_weights(2)) == 4 and len(B.thesis_case_weights(1)) == 2
    # the case list is right for n <= 3 (it misses chambers only from n = 4 on)
    tables = B.truth_table(np.arange(256), 3)
    np.testing.assert_array_equal(B.thesis_swaps(tables), B.swaps_all(3))
    assert isinstance(B.thesis_swaps(tables[105]), float)


def test_change_counts_against_the_definition():
    """Entry [f, t, o] = class changes of f o T_t read along order type o, counted directly."""
    rng = np.random.default_rng(6)
    tables = rng.integers(0, 2, (3, 8)).astype(np.uint8)
    counts = B.change_counts(tables)
    _, signs, maps = B._signed_permutations(3)
    kept = maps[signs[:, 0] == 1]                                              # one of each reversed pair
    _, orders = B.order_types(3)
    assert counts.shape == (3, 24, 2) and len(kept) == 24
    for f, table in enumerate(tables):
        for t, T in enumerate(kept):
            g = table[T]
            for o, order in enumerate(orders):
                assert counts[f, t, o] == np.sum(g[order][1:] != g[order][:-1])
    assert np.array_equal(B.swaps_many(tables, batch=1), counts.min(axis=(1, 2)))
    assert np.array_equal(B.swaps_many(tables, batch=2), B.swaps_all(3)[[B.table_to_id(t) for t in tables]])


def test_train_boolean_nets_against_autograd_adam():
    """Three epochs of the stacked trainer against the same nets written with einsum, torch autograd and
    torch.optim.Adam on the sum of the nets' mean BCE: success and best accuracy per net agree."""
    tables = B.truth_table([1, 105, 27030], 4)
    trials, epochs, alpha, lr = 3, 3, 0.1, 0.05
    ok, acc = B.train_boolean_nets(tables, 3, 2, alpha, trials=trials, epochs=epochs, lr=lr, seed=4,
                                   progress=False, with_accuracy=True)
    ref = B.StackedMLP([4, 3, 3, 1], 3 * trials, alpha, 4)                     # the same initial weights
    params = [p.clone().requires_grad_() for p in ref.params]
    X = torch.tensor(B.cube(4), dtype=torch.float32)
    Y = torch.tensor(np.repeat(tables.T, trials, axis=1), dtype=torch.float32)  # net f * trials + r

    def logits():
        h = X[:, :, None].expand(-1, -1, 3 * trials)
        for k in range(0, len(params), 2):
            z = torch.einsum("piB,ioB->poB", h, params[k]) + params[k + 1]
            h = torch.where(z > 0, z, alpha * z)
        return z[:, 0, :]

    opt = torch.optim.Adam(params, lr=lr)
    best, solved = torch.zeros(3 * trials), torch.zeros(3 * trials, dtype=torch.bool)
    for _ in range(epochs + 1):
        out = logits()
        correct = (out > 0) == (Y > 0.5)
        best, solved = torch.maximum(best, correct.float().mean(0)), solved | correct.all(0)
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(out, Y, reduction="none").mean(0).sum().backward()
        opt.step()
    assert np.array_equal(ok, solved.numpy().reshape(3, trials))
    np.testing.assert_allclose(acc, best.numpy().reshape(3, trials), atol=1e-7)
    assert not np.array_equal(acc, np.ones_like(acc))                          # the check is not trivial
    he = B.train_boolean_nets(tables, 3, 2, alpha, trials=trials, epochs=epochs, lr=lr, seed=4, progress=False)
    assert np.array_equal(he, ok)                                              # with_accuracy changes nothing


def test_prune_and_finetune_stop_at_first_and_no_record():
    kw = dict(width=3, alpha=0.1, parents=3, epochs=150, seed=2, max_width=2, progress=False)
    full = B.prune_and_finetune([0, 0, 0, 1], **kw)
    short = B.prune_and_finetune([0, 0, 0, 1], **kw, record=False, stop_at_first=True)
    assert np.array_equal(full["parents_used"], short["parents_used"]) and len(full["parents_used"])
    assert full["subsets"][2] == [(0, 1), (0, 2), (1, 2)] and full["subsets"][1] == [(0,), (1,), (2,)]
    for res in (full, short):                                                  # smallest = first width that works
        first = [min([k for k in res["solved"] if res["solved"][k][i].any()], default=0) for i in range(len(res["smallest"]))]
        assert res["smallest"].tolist() == first
    assert np.array_equal(full["solved"][1], short["solved"][1])               # same training, no curves kept
    assert short["curves"][1] is None and full["curves"][1].shape == (150, len(full["parents_used"]), 3)
    assert full["tried"][2].all()
    if 2 in short["tried"]:
        assert np.array_equal(short["tried"][2], ~short["solved"][1].any(1))
        assert not short["solved"][2][~short["tried"][2]].any()
    else:
        assert short["solved"][1].any(1).all()                                 # every parent done at width 1
    assert np.array_equal(full["smallest"], short["smallest"])
    assert (full["smallest"] == 1).all()                                       # AND: one unit suffices


def _climb_trajectory(n, seed, sideways, steps):
    """Tables after 0, 1, ..., steps moves of one restart (the same random draws for every max_steps)."""
    return [B.climb_max_swaps(n, 1, seed=seed, max_steps=k, sideways=sideways, progress=False) for k in range(steps + 1)]


@pytest.mark.parametrize("sideways", [0, 2])
def test_climb_max_swaps_follows_its_rules(sideways):
    """Read one restart's path move by move (max_steps = 0, 1, 2, ...): it starts from default_rng(seed)'s
    random table, each move flips one entry to a neighbour of the largest swaps value (all 2^n checked
    here by lookup), at most ``sideways`` moves in a row keep the value, and it stops exactly when no
    neighbour is better and no plateau move is left."""
    s4 = B.swaps_all(4)
    plateau_moves = stops = 0
    for seed in range(4):
        path = _climb_trajectory(4, seed, sideways, 9)
        start = np.random.default_rng(seed).integers(0, 2, 16).astype(np.uint8)
        assert np.array_equal(path[0][0], start) and path[0][1] == s4[B.table_to_id(start)]
        flat = 0
        for (t0, v0, f0), (t1, v1, f1) in zip(path[:-1], path[1:]):
            assert v0 == f0[0] == s4[B.table_to_id(t0)] and v1 == f1[0] == s4[B.table_to_id(t1)]
            best_neighbour = max(s4[B.table_to_id(t0 ^ e)] for e in np.eye(16, dtype=np.uint8))
            can_move = best_neighbour > v0 or (best_neighbour == v0 and flat < sideways)
            if np.array_equal(t0, t1):
                assert not can_move, (seed, v0, best_neighbour, flat)
                stops += 1
            else:
                assert can_move and np.sum(t0 != t1) == 1 and v1 == best_neighbour
                flat = flat + 1 if v1 == v0 else 0
                plateau_moves += v1 == v0
    assert plateau_moves >= sideways and stops >= 1                             # both rules were exercised


def test_climb_max_swaps_best_and_reproducible():
    one = B.climb_max_swaps(1, 2, progress=False)                             # n = 1: every climb ends at 1
    assert one[1] == 1 and B.swaps(one[0]) == 1 and one[2].tolist() == [1, 1]
    table, value, finals = B.climb_max_swaps(3, 4, progress=False)
    again = B.climb_max_swaps(3, 4, seed=0, progress=False)
    assert np.array_equal(table, again[0]) and value == again[1] and np.array_equal(finals, again[2])
    assert value == finals.max() == B.swaps(table)
    # the best table is the first restart's that reaches the best value: restart 0 reaches the n = 3
    # maximum, so adding restarts (each path is the same whatever follows it) never changes it
    assert finals[0] == value == 3
    for restarts in (2, 3, 4):
        assert np.array_equal(B.climb_max_swaps(3, restarts, progress=False)[0], table)


def test_changes_along_ties_and_large_n():
    # a near-tie 8e-9 apart is a separation (ties are within 1e-9), an exact tie across classes is not
    assert B.changes_along([0, 1, 0, 0], [1.0, 1.0 + 4e-9]) == 2.0
    assert B.changes_along([0, 1, 0, 0], [1.0, 1.0]) == math.inf
    assert B.changes_along([0, 1, 1, 0], [1.0, 1.0]) == 2.0                   # a tie within one class is fine
    rows = np.array([[0, 1, 0, 0], [0, 1, 1, 0], [0, 1, 1, 1]], dtype=np.uint8)
    assert B._changes_along_rows(rows, np.array([1.0, 1.0])).tolist() == [math.inf, 2.0, 1.0]
    assert B.changes_along(B.parity_table(6), np.ones(6)) == 6.0                # n = 6 > the exact limit of 5
    with pytest.raises(ValueError, match=r"^table \(truth table\): truth tables of n = 17 inputs are not supported here \(at most n = 16\)$"):
        B.changes_along(np.zeros(2 ** 17, np.uint8), np.ones(17))
    with pytest.raises(ValueError, match=r"^table \(truth table\) must hold only the values 0 or 1$"):
        B.changes_along([0, 2, 0, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"^n must be an int in \[1, width\*\*depth = 9\], got 10$"):
        B.parity_network(10, 3, 2)


def test_xor1d_one_step_by_hand():
    """One gradient-descent step of eq. 3.25's SSE from the documented start (He-normal w, N(0, 1) o,
    zero biases, torch's generator at ``seed``), with the gradient written out by hand in numpy."""
    losses, params = B.xor1d_local_optima(1, steps=1)                           # lr 0.1, seed 0 by default
    gen = torch.Generator().manual_seed(0)
    w = (torch.randn(2, 1, generator=gen) * math.sqrt(2.0)).numpy()[:, 0].astype(float)
    o = torch.randn(2, 1, generator=gen).numpy()[:, 0].astype(float)
    b, c = np.zeros(2), 0.0
    x, y = np.array([-1.0, 0.0, 0.0, 1.0]), np.array([-1.0, 1.0, 1.0, -1.0])
    z = w[None, :] * x[:, None] + b                                              # (points, units)
    r = (np.maximum(z, 0) @ o + c) - y
    on = (z > 0).astype(float)
    gw, gb = 2 * ((r[:, None] * on * o) * x[:, None]).sum(0), 2 * (r[:, None] * on * o).sum(0)
    go, gc = 2 * (r[:, None] * np.maximum(z, 0)).sum(0), 2 * r.sum()
    w, b, o, c = w - 0.1 * gw, b - 0.1 * gb, o - 0.1 * go, c - 0.1 * gc
    final = (((np.maximum(w[None, :] * x[:, None] + b, 0) @ o + c) - y) ** 2).sum()
    np.testing.assert_allclose(params["w"][:, 0], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["o"][:, 0], o, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["b"][:, 0], b, atol=1e-6)
    np.testing.assert_allclose(params["c"], [c], atol=1e-6)
    np.testing.assert_allclose(losses, [final], rtol=1e-5)


def test_xor1d_divergence_names_the_learning_rate():
    with pytest.raises(FloatingPointError, match=r"by step 60 with lr=1000000\.0: the learning rate"):
        B.xor1d_local_optima(3, steps=60, lr=1e6)


def test_training_divergence_is_reported_by_step_100():
    """Weights are checked every 100 epochs and after the last: a huge lr is named with the step."""
    xor = B.truth_table([6], 2)
    with pytest.raises(FloatingPointError, match=r"^the training weights became NaN or infinite by step 100 with lr=1e\+30"):
        B.train_boolean_nets(xor, 3, 2, 0.1, trials=2, epochs=150, lr=1e30, progress=False)
    with pytest.raises(FloatingPointError, match=r"^the training weights became NaN or infinite by step 50 with lr=1e\+30"):
        B.train_boolean_nets(xor, 3, 2, 0.1, trials=2, epochs=50, lr=1e30, progress=False)


def test_id_transform_lookup_tables_against_the_tables():
    """The byte lookup tables behind npn_class_ids_all and swaps_all, called directly (not through their
    caches): the id of f maps to the id of f o T, read off the transformed truth table."""
    rng = np.random.default_rng(8)
    for n in (2, 3, 4):
        luts, chunk = B._id_permuters(n)
        maps = B.npn_transforms(n)
        assert chunk == min(8, 2 ** n) and len(luts) == 2 ** n // chunk
        ids = rng.integers(0, 2 ** (2 ** n), 12)
        tables = B.truth_table(ids, n)
        for t in rng.choice(len(maps), 6, replace=False):
            expected = [int("".join(map(str, row[maps[t]])), 2) for row in tables]
            assert B._transform_ids(ids, luts, chunk, t).tolist() == expected


def test_trainer_defaults_boundaries_and_progress_bars(capsys):
    """Defaults (seed 0, a progress bar naming what trains), the smallest accepted arguments (width 1,
    compact_every 1), n <= 12 inputs, and prune_and_finetune's widths 1..max_width, each width listed
    also when stop_at_first leaves nothing to try."""
    xor = B.parity_table(2)
    quiet = dict(progress=False)
    runs = [B.train_boolean_nets(xor[None], 2, 1, 0.1, 20, 40, with_accuracy=True, **quiet, **seed) for seed in
            ({}, {"seed": 0}, {"seed": 1})]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0], runs[1]))
    assert not np.array_equal(runs[0][1], runs[2][1])  # (so the default is seed 0, not any seed)
    assert not np.array_equal(B.prune_and_finetune(xor, 3, 0.1, 6, 40, max_width=1, **quiet)["curves"][1],
                              B.prune_and_finetune(xor, 3, 0.1, 6, 40, max_width=1, seed=1, **quiet)["curves"][1])
    assert B.train_boolean_nets(xor[None], 1, 1, 0.1, 2, 5, compact_every=1, **quiet).shape == (1, 2)
    capsys.readouterr()
    B.train_boolean_nets(xor[None], 2, 1, 0.1, 2, 5)
    B.prune_and_finetune(xor, 2, 0.1, 2, 5, max_width=1)
    err = capsys.readouterr().err
    assert "n=2 2x1 alpha=0.1" in err and "parents width 2" in err
    too_many = np.zeros(2 ** 13, dtype=np.uint8)
    for call in (lambda: B.train_boolean_nets(too_many[None], 2, 1, 0.1, 1, 1, **quiet),
                 lambda: B.prune_and_finetune(too_many, 2, 0.1, 1, 1, max_width=1, **quiet)):
        with pytest.raises(ValueError, match=r"^table.*n = 13 inputs are not supported here \(at most n = 12\)$"):
            call()
    res = B.prune_and_finetune([0, 1, 1, 1], 3, 0.1, 2, 300, max_width=3, stop_at_first=True, **quiet)
    assert res["smallest"].tolist() == [1, 1]  # OR: one unit suffices, widths 2 and 3 are never tried
    assert sorted(res["subsets"]) == [1, 2, 3] and sorted(res["tried"]) == [1]
    assert res["subsets"][3] == [(0, 1, 2)]


def test_counts_refuse_bools():
    """True is an int to Python, never a count here (it was read as 1)."""
    tables = np.array([[0, 1, 1, 0]])
    with pytest.raises(ValueError, match="epochs"):
        B.train_boolean_nets(tables, 2, 1, 0.0, 1, True, 0.1, 0)
    with pytest.raises(ValueError, match="compact_every"):
        B.train_boolean_nets(tables, 2, 1, 0.0, 1, 2, 0.1, 0, compact_every=True)
