"""lib.teacher_student: values against independent computations (brute-force loops, autograd)."""

import math

import numpy as np
import pytest
import torch

from lib import teacher_student as TS
from lib.validate import TrainingDivergedError


def small_setup(S=None, d=4, m=3, n=5, C=2, N=40, p=1.0, seed=0):
    T = TS.make_teacher(d, m, C, p=p, seed=seed)
    st = TS.make_student(d, n, C, S=S, scale=0.5, seed=seed + 1)
    X = TS.gaussian_inputs(N, d, seed=seed + 2)
    return T, st, X


def torch_loss(teacher, student, x):
    """½‖f*(x) − f(x)‖² averaged over the rows of x, via torch (autograd reference)."""
    def f(net, x):
        (W1, b1), (W2, b2) = net
        return torch.relu(x @ W1.T + b1) @ W2.T + b2
    return 0.5 * ((f(teacher, x) - f(student, x)) ** 2).sum(1).mean()


def autograd_step(teacher, student, x, lr):
    T = [(torch.tensor(W), torch.tensor(b)) for W, b in teacher]
    S = [(torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True)) for W, b in student]
    torch_loss(T, S, torch.tensor(x)).backward()
    return [((W - lr * W.grad).detach().numpy(), (b - lr * b.grad).detach().numpy()) for W, b in S]


# ---------------------------------------------------------------------------------------------- correlation

def brute_best(Ht, Hs):
    out = []
    for j in range(Ht.shape[1]):
        best = -np.inf
        for k in range(Hs.shape[1]):
            a, b = Ht[:, j], Hs[:, k]
            r = 0.0 if a.std() == 0 or b.std() == 0 else np.corrcoef(a, b)[0, 1]
            best = max(best, r)
        out.append(best)
    return np.array(out)


def test_best_correlation_matches_a_brute_force_loop():
    rng = np.random.default_rng(0)
    Ht = np.maximum(rng.standard_normal((50, 4)), 0)
    Hs = np.maximum(rng.standard_normal((50, 6)) + rng.standard_normal((50, 1)), 0)
    Hs[:, 2] = 3.0 * Ht[:, 1] + 7.0   # an exact positive rescale and shift of teacher 1
    Hs[:, 4] = 0.0                    # a dead node
    got = TS.best_correlation(Ht, Hs)
    assert got.shape == (4,)
    assert np.allclose(got, brute_best(Ht, Hs), atol=1e-12)
    assert abs(got[1] - 1.0) < 1e-12
    C = TS.correlation_matrix(Ht, Hs)
    assert C.shape == (4, 6) and np.all(C[:, 4] == 0)
    assert np.allclose(C[0], [np.corrcoef(Ht[:, 0], Hs[:, k])[0, 1] if k != 4 else 0 for k in range(6)])


def test_negative_correlations_are_kept_and_constant_columns_give_zero():
    a = np.array([0.0, 1.0, 2.0, 3.0])
    Ht = np.stack([a, np.full(4, 2.5)], axis=1)
    Hs = np.stack([-a, -2 * a + 1], axis=1)
    assert np.allclose(TS.best_correlation(Ht, Hs), [-1.0, 0.0])
    assert np.allclose(TS.correlation_matrix(Ht, np.full((4, 1), 1e6)), 0.0)


def test_correlation_rejects_mismatched_rows():
    with pytest.raises(ValueError, match="same number of rows"):
        TS.best_correlation(np.ones((5, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="H_student"):
        TS.best_correlation(np.ones((5, 2)), np.ones(5))


def test_student_that_copies_the_teacher_has_correlation_one():
    T, st, X = small_setup(n=5)
    (W1, b1), (W2, b2) = st
    W1[:3], b1[:3] = 2.0 * T[0][0], 2.0 * T[0][1]
    Ht, _ = TS.hidden_and_output(T, X)
    Hs, _ = TS.hidden_and_output(st, X)
    assert np.allclose(TS.best_correlation(Ht, Hs), 1.0, atol=1e-12)


# ---------------------------------------------------------------------------------------------- networks

def test_make_teacher_is_regular_with_decaying_fan_out():
    (W1, b1), (W2, b2) = TS.make_teacher(6, 4, 3, p=0.0, bias=-0.1, seed=5)
    (V1, c1), (V2, c2) = TS.make_teacher(6, 4, 3, p=1.5, bias=-0.1, seed=5)
    assert W1.shape == (4, 6) and W2.shape == (3, 4) and b1.shape == (4,) and b2.shape == (3,)
    assert np.allclose(np.linalg.norm(W1, axis=1), 1.0) and np.allclose(W1, V1)
    assert np.allclose(V2, W2 / np.array([1, 2, 3, 4]) ** 1.5)
    assert np.all(b1 == -0.1) and np.all(c2 == -0.1)
    assert set(np.unique(W2)) <= set(TS.CHOICES)
    # the public code's init_separate_w(c, m): the rows of W2 (one per output) are the distinct ones
    many = TS.make_teacher(3, 2, 12, p=0.0, seed=0)[1][0]             # 12 outputs, 2 nodes: 81 possible rows
    assert len({tuple(r) for r in many}) == 12 and (np.abs(many).sum(1) > 0).all()
    assert np.array_equal(many, TS.discrete_distinct_rows(12, 2, 1))
    assert not np.allclose(TS.make_teacher(6, 4, 3, seed=6)[0][0], W1)


def test_discrete_distinct_rows_are_distinct_and_from_the_choices():
    M = TS.discrete_distinct_rows(8, 3, seed=1, choices=(-1.0, 0.0, 1.0))
    assert M.shape == (8, 3) and set(np.unique(M)) <= {-1.0, 0.0, 1.0}
    assert len({tuple(r) for r in M}) == 8 and (np.abs(M).sum(1) > 0).all()
    with pytest.raises(ValueError, match="could not draw"):
        TS.discrete_distinct_rows(3, 1, choices=(0.0, 1.0))
    with pytest.raises(ValueError, match="two distinct"):
        TS.discrete_distinct_rows(3, 2, choices=(1.0, 1.0))


def test_make_student_shapes_and_scale():
    (W1, b1), (W2, b2) = TS.make_student(3, 7, 2, S=4, scale=0.1, seed=0)
    assert W1.shape == (4, 7, 3) and b1.shape == (4, 7) and W2.shape == (4, 2, 7) and b2.shape == (4, 2)
    assert np.all(b1 == 0) and np.all(b2 == 0)
    big = TS.make_student(50, 100, 50, scale=0.1, seed=0)
    assert abs(big[0][0].std() - 0.1) < 0.005 and big[0][0].shape == (100, 50)


def test_gaussian_inputs_have_the_requested_std():
    X = TS.gaussian_inputs(20000, 3, std=1.5, seed=0)
    assert X.shape == (20000, 3) and abs(X.std() - 1.5) < 0.02
    assert np.array_equal(X, TS.gaussian_inputs(20000, 3, std=1.5, seed=0))


def test_hidden_and_output_matches_a_loop_batched_and_not():
    T, st, X = small_setup(S=3)
    H, Y = TS.hidden_and_output(st, X)
    assert H.shape == (3, 40, 5) and Y.shape == (3, 40, 2)
    for s in range(3):
        for i in range(0, 40, 7):
            h = np.maximum(st[0][0][s] @ X[i] + st[0][1][s], 0)
            assert np.allclose(H[s, i], h) and np.allclose(Y[s, i], st[1][0][s] @ h + st[1][1][s])
    with pytest.raises(ValueError, match="columns"):
        TS.hidden_and_output(T, X[:, :3])


def test_fan_out_norms_are_column_norms_of_the_output_matrix():
    st = TS.make_student(3, 4, 6, scale=1.0, seed=0)   # W2 is (6, 4): rows != columns
    assert np.allclose(TS.fan_out_norms(st), [np.linalg.norm(st[1][0][:, k]) for k in range(4)])
    stb = TS.make_student(3, 4, 6, S=2, scale=1.0, seed=0)
    assert TS.fan_out_norms(stb).shape == (2, 4)


def test_prune_students_zeroes_fan_out_only():
    T, st, X = small_setup(S=2)
    keep = np.array([[True, False, True, True, False], [False] * 5])
    pr = TS.prune_students(st, keep)
    assert np.array_equal(pr[0][0], st[0][0]) and np.array_equal(pr[1][1], st[1][1])
    assert np.all(pr[1][0][0][:, [1, 4]] == 0) and np.array_equal(pr[1][0][0][:, 0], st[1][0][0][:, 0])
    assert np.all(pr[1][0][1] == 0)
    with pytest.raises(ValueError, match="keep"):
        TS.prune_students(st, keep[0])


def test_two_layer_flops_hand_count():
    # forward 2*B*(dn + nC), backward 2*B*nC (dW2) + 2*B*nC (g1) + 2*B*dn (dW1), update 2*(nd + n + Cn + C)
    assert TS.two_layer_flops(3, 4, 5, 2) == 2 * 2 * (12 + 20) + 2 * 2 * 20 * 2 + 2 * 2 * 12 + 2 * (12 + 4 + 20 + 5)


# ---------------------------------------------------------------------------------------------- training

def test_one_full_batch_step_equals_autograd():
    T, st, X = small_setup()
    got = TS.train_two_layer(T, st, X, 1, 0.05, batch_size=None)
    want = autograd_step(T, st, X, 0.05)
    for (W, b), (Wr, br) in zip(got, want):
        assert np.allclose(W, Wr, atol=1e-13) and np.allclose(b, br, atol=1e-13)


def test_one_minibatch_step_equals_autograd_on_the_drawn_rows():
    T, st, X = small_setup(S=2)
    got = TS.train_two_layer(T, st, X, 1, 0.1, batch_size=7, seed=3)
    idx = np.random.default_rng(3).integers(len(X), size=(1, 2, 7))[0]
    for s in range(2):
        one = [(W[s], b[s]) for W, b in st]
        want = autograd_step(T, one, X[idx[s]], 0.1)
        for (W, b), (Wr, br) in zip(got, want):
            assert np.allclose(W[s], Wr, atol=1e-13) and np.allclose(b[s], br, atol=1e-13)


def test_several_gd_steps_equal_repeated_autograd_and_batching_changes_nothing():
    T, st, X = small_setup(S=3)
    got = TS.train_two_layer(T, st, X, 5, 0.05, batch_size=None)
    for s in range(3):
        ref = [(W[s], b[s]) for W, b in st]
        for _ in range(5):
            ref = autograd_step(T, ref, X, 0.05)
        alone = TS.train_two_layer(T, [(W[s], b[s]) for W, b in st], X, 5, 0.05, batch_size=None)
        for (W, b), (Wr, br), (Wa, ba) in zip(got, ref, alone):
            assert np.allclose(W[s], Wr, atol=1e-12) and np.allclose(b[s], br, atol=1e-12)
            assert np.allclose(Wa, W[s], atol=1e-14) and np.allclose(ba, b[s], atol=1e-14)


def test_sgd_steps_beyond_one_chunk_follow_the_drawn_indices():
    T, st, X = small_setup(N=6, d=2, n=3, m=2)
    steps = 1030                        # past the trainer's 1024-step chunk of drawn indices
    got = TS.train_two_layer(T, st, X, steps, 0.02, batch_size=2, seed=9)
    rng = np.random.default_rng(9)
    idx = np.concatenate([rng.integers(6, size=(1024, 1, 2)), rng.integers(6, size=(6, 1, 2))])
    ref = st
    (T1, c1), (T2, c2) = T
    for t in range(steps):           # plain numpy reference, written independently of the trainer
        x = X[idx[t, 0]]
        (W1, b1), (W2, b2) = ref
        z = x @ W1.T + b1
        h = np.maximum(z, 0)
        e = (np.maximum(x @ T1.T + c1, 0) @ T2.T + c2) - (h @ W2.T + b2)
        g1 = (e @ W2) * (z > 0)
        ref = [(W1 + 0.02 * g1.T @ x / 2, b1 + 0.02 * g1.mean(0)), (W2 + 0.02 * e.T @ h / 2, b2 + 0.02 * e.mean(0))]
    for (W, b), (Wr, br) in zip(got, ref):
        assert np.allclose(W, Wr, atol=1e-11) and np.allclose(b, br, atol=1e-11)


def test_training_reduces_the_loss_and_is_reproducible():
    T, st, X = small_setup(S=2, N=200)
    a = TS.train_two_layer(T, st, X, 300, 0.05, seed=1)
    b = TS.train_two_layer(T, st, X, 300, 0.05, seed=1)
    c = TS.train_two_layer(T, st, X, 300, 0.05, seed=2)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    assert not np.array_equal(a[0][0], c[0][0])
    _, Yt = TS.hidden_and_output(T, X)
    loss = lambda net: ((TS.hidden_and_output(net, X)[1] - Yt) ** 2).sum(-1).mean(-1)  # noqa: E731
    assert np.all(loss(a) < 0.5 * loss(st))
    assert np.array_equal(st[0][0], TS.make_student(4, 5, 2, S=2, scale=0.5, seed=1)[0][0])  # input untouched


def test_batched_teacher_trains_each_student_on_its_own_teacher():
    T1, st, X = small_setup(S=2, seed=0)
    T2 = TS.make_teacher(4, 3, 2, seed=7)
    Tb = [(np.stack([T1[l][0], T2[l][0]]), np.stack([T1[l][1], T2[l][1]])) for l in range(2)]
    got = TS.train_two_layer(Tb, st, X, 3, 0.05, batch_size=None)
    for s, T in enumerate((T1, T2)):
        ref = [(W[s], b[s]) for W, b in st]
        for _ in range(3):
            ref = autograd_step(T, ref, X, 0.05)
        assert np.allclose(got[0][0][s], ref[0][0], atol=1e-12) and np.allclose(got[1][1][s], ref[1][1], atol=1e-12)


def test_torch_in_torch_out_and_zero_steps():
    T, st, X = small_setup()
    out = TS.train_two_layer(T, [(torch.tensor(W), torch.tensor(b)) for W, b in st], X, 0, 0.1)
    assert isinstance(out[0][0], torch.Tensor) and np.array_equal(out[0][0].numpy(), st[0][0])
    assert isinstance(TS.train_two_layer(T, st, X, 1, 0.1)[0][0], np.ndarray)


def test_snapshots_are_the_students_at_the_recorded_steps():
    T, st, X = small_setup()
    end, snaps = TS.train_with_snapshots(T, st, X, 6, 0.05, [0, 2, 6], batch_size=None)
    assert sorted(snaps) == [0, 2, 6]
    assert np.array_equal(snaps[0][0][0], st[0][0]) and np.array_equal(snaps[6][1][0], end[1][0])
    two = TS.train_two_layer(T, st, X, 2, 0.05, batch_size=None)
    assert np.allclose(snaps[2][0][0], two[0][0], atol=1e-15)
    with pytest.raises(ValueError, match="record_at"):
        TS.train_with_snapshots(T, st, X, 6, 0.05, [7])
    # defaults: SGD with batch 16 and seed 0, the same draws as train_two_layer; tensors in, tensors out
    end, snaps = TS.train_with_snapshots(T, st, X, 4, 0.05, [2])
    for (W, b), (Wr, br) in zip(end, TS.train_two_layer(T, st, X, 4, 0.05, batch_size=16, seed=0)):
        assert np.array_equal(W, Wr) and np.array_equal(b, br)
    assert all(np.array_equal(W, Wr) for (W, _), (Wr, _) in zip(TS.train_two_layer(T, st, X, 4, 0.05), end))
    tend, tsnaps = TS.train_with_snapshots(T, [(torch.tensor(W), torch.tensor(b)) for W, b in st], X, 4, 0.05, [2])
    assert isinstance(tend[0][0], torch.Tensor) and isinstance(tsnaps[2][1][1], torch.Tensor)
    assert np.array_equal(tsnaps[2][0][0].numpy(), snaps[2][0][0])


def test_divergence_raises():
    T, st, X = small_setup()
    with pytest.raises(TrainingDivergedError, match="lr="):
        TS.train_two_layer(T, st, 1e3 * X, 300, 10.0, batch_size=None)


@pytest.mark.parametrize("kwargs, match", [
    (dict(steps=-1), "steps"), (dict(lr=0.0), "lr"), (dict(batch_size=0), "batch_size"), (dict(seed=-1), "seed"),
])
def test_train_rejects_bad_arguments(kwargs, match):
    T, st, X = small_setup()
    args = dict(steps=1, lr=0.1, batch_size=4, seed=0) | kwargs
    with pytest.raises(ValueError, match=match):
        TS.train_two_layer(T, st, X, **args)


def test_train_rejects_mismatched_nets():
    T, st, X = small_setup()
    with pytest.raises(ValueError, match="columns"):
        TS.train_two_layer(T, st, X[:, :3], 1, 0.1)
    with pytest.raises(ValueError, match="outputs"):
        TS.train_two_layer(T, TS.make_student(4, 5, 3), X, 1, 0.1)
    with pytest.raises(ValueError, match="two-layer"):
        TS.train_two_layer(T, st[:1], X, 1, 0.1)
    with pytest.raises(ValueError, match="b must have shape"):
        TS.train_two_layer(T, [(st[0][0], st[0][1][:-1]), st[1]], X, 1, 0.1)
    with pytest.raises(ValueError, match="inputs but layer"):
        TS.train_two_layer(T, [st[0], (st[1][0][:, :-1], st[1][1])], X, 1, 0.1)
    Tb = [(np.stack([W, W]), np.stack([b, b])) for W, b in T]
    with pytest.raises(ValueError, match="batched teacher"):
        TS.train_two_layer(Tb, st, X, 1, 0.1)
    with pytest.raises(ValueError, match="leading"):
        TS.train_two_layer(T, [st[0], (st[1][0][None], st[1][1][None])], X, 1, 0.1)
    with pytest.raises(ValueError, match="pair"):
        TS.train_two_layer(T, [st[0], 3], X, 1, 0.1)


# ---------------------------------------------------------------------------------------------- Lemma 1

def deep_net(widths, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return [(scale * rng.standard_normal((o, i)) / math.sqrt(i), 0.3 * rng.standard_normal(o))
            for i, o in zip(widths[:-1], widths[1:])]


def autograd_gated_gradients(teacher, student, X):
    """−∂J/∂z_l for J = ½ Σ_x ‖f*(x) − f(x)‖² (per-sample gradients, since samples do not interact)."""
    with torch.no_grad():
        f = torch.tensor(X)
        for i, (W, b) in enumerate(teacher):
            f = f @ torch.tensor(W).T + torch.tensor(b)
            f = f if i == len(teacher) - 1 else torch.relu(f)
        target = f
    zs, f = [], torch.tensor(X)
    for i, (W, b) in enumerate(student):
        z = f @ torch.tensor(W, requires_grad=True).T + torch.tensor(b, requires_grad=True)
        z.retain_grad()
        zs.append(z)
        f = z if i == len(student) - 1 else torch.relu(z)
    (0.5 * ((target - f) ** 2).sum()).backward()
    return [-z.grad.numpy() for z in zs]


@pytest.mark.parametrize("tw, sw", [([3, 4, 3, 2], [3, 6, 5, 2]), ([5, 2], [5, 2]), ([2, 3, 2], [2, 7, 2])])
def test_lemma1_recursive_gradient_equals_autograd(tw, sw):
    teacher, student = deep_net(tw, 0), deep_net(sw, 1)
    X = np.random.default_rng(2).standard_normal((60, tw[0]))
    got = TS.recursive_gradients(teacher, student, X)
    want = autograd_gated_gradients(teacher, student, X)
    assert [g.shape for g in got] == [(60, w) for w in sw[1:]]
    for g, w in zip(got, want):
        assert np.max(np.abs(g - w)) < 1e-10
    assert max(np.abs(w).max() for w in want) > 0.1   # the comparison is not between zeros


def _output_jacobian(net, f_l, l):
    """(C, n_l + 1): ∂f_L/∂f_l of ``net`` at the layer-l activations ``f_l`` (one sample), by autograd, the gates
    of the layers above held at their values there, and the offset f_L − J f_l as the last column: V_l of Eq. 3."""
    def upper(h):
        for i, (W, b) in enumerate(net[l:]):
            h = h @ torch.tensor(W).T + torch.tensor(b)
            if l + i < len(net) - 1:
                h = h * (h > 0).double().detach()
        return h
    h = torch.tensor(f_l)
    J = torch.autograd.functional.jacobian(upper, h).numpy()
    return np.concatenate([J, (upper(h).detach().numpy() - J @ f_l)[:, None]], axis=1)


def test_recursive_terms_are_products_of_output_jacobians_and_piecewise_constant():
    """A_l = V_lᵀ V*_l and B_l = V_lᵀ V_l with V_l the output's Jacobian in the layer-l activations (plus the
    offset column), computed by autograd; and Corollary 2: along a line, A_l changes only where a gate of a
    layer above l flips, in either net."""
    T, S = deep_net([3, 4, 3, 2], 1), deep_net([3, 6, 5, 2], 2)
    X = np.random.default_rng(3).standard_normal((6, 3))
    terms = TS.recursive_terms(T, S, X)
    assert [t["A"].shape for t in terms] == [(6, 7, 5), (6, 6, 4), (6, 3, 3)]
    assert [t["B"].shape for t in terms] == [(6, 7, 7), (6, 6, 6), (6, 3, 3)]
    for l in range(3):                                                 # terms[l]: layer l + 1 (1-based)
        for i, x in enumerate(X):
            f_s, f_t = x, x
            for k, ((W, b), (Wt, bt)) in enumerate(zip(S[:l + 1], T[:l + 1])):
                z_s, z_t = W @ f_s + b, Wt @ f_t + bt
                f_s, f_t = (z_s, z_t) if k == 2 else (np.maximum(z_s, 0), np.maximum(z_t, 0))
            Vs, Vt = _output_jacobian(S, f_s, l + 1), _output_jacobian(T, f_t, l + 1)
            assert np.allclose(terms[l]["A"][i], Vs.T @ Vt, atol=1e-12)
            assert np.allclose(terms[l]["B"][i], Vs.T @ Vs, atol=1e-12)
            assert np.allclose(terms[l]["f"][i], np.append(f_s, 1.0)) and np.allclose(terms[l]["f_star"][i], np.append(f_t, 1.0))
            assert np.array_equal(terms[l]["D"][i], (z_s > 0).astype(float) if l < 2 else np.ones(2))
        assert np.all(terms[-1]["D"] == 1.0)                           # no gate at the top
    t = np.linspace(-3, 3, 2001)[:, None]
    line = t * np.array([[1.0, -0.5, 0.8]]) + np.array([[0.2, 0.1, -0.3]])
    terms = TS.recursive_terms(T, S, line)
    for l in range(2):
        pattern = np.concatenate([(TS._forward_all(net, line)[0][k] > 0) for net in (S, T) for k in range(l + 1, 2)]
                                 + [np.zeros((len(line), 0), bool)], axis=1)
        same = (pattern[1:] == pattern[:-1]).all(axis=1)
        A = terms[l]["A"]
        assert np.array_equal(A[1:][same], A[:-1][same])                 # constant where no upper gate flips
        assert (~np.isclose(A[1:], A[:-1]).all(axis=(1, 2)))[~same].all()  # and it changes at every flip
        assert 1 < (~same).sum() < 100 if l == 0 else same.all()        # layer 2 of 3: no gate above, constant


def test_lemma1_rejects_mismatched_depths():
    with pytest.raises(ValueError, match="same depth"):
        TS.recursive_gradients(deep_net([3, 4, 2], 0), deep_net([3, 2], 1), np.ones((2, 3)))
    with pytest.raises(ValueError, match="outputs"):
        TS.recursive_gradients(deep_net([3, 4, 2], 0), deep_net([3, 4, 3], 1), np.ones((2, 3)))
    with pytest.raises(ValueError, match="columns"):
        TS.recursive_gradients(deep_net([3, 4, 2], 0), deep_net([3, 4, 2], 1), np.ones((2, 4)))


# ---------------------------------------------------------------------------------------------- metrics

def test_specialisation_steps_brute_force():
    rng = np.random.default_rng(0)
    hist = rng.uniform(0.5, 1.0, size=(3, 7, 4))
    steps = np.array([0, 5, 10, 20, 40, 80, 160])
    got = TS.specialisation_steps(hist, steps, threshold=0.9)
    for s in range(3):
        for j in range(4):
            above = [steps[t] for t in range(7) if hist[s, t, j] > 0.9]
            assert got[s, j] == (above[0] if above else np.inf)
    assert TS.specialisation_steps(np.array([[0.9], [0.95]]), [0, 1], threshold=0.9)[0] == 1  # strictly above
    with pytest.raises(ValueError, match="increasing"):
        TS.specialisation_steps(hist, steps[::-1])
    with pytest.raises(ValueError, match="recorded steps"):
        TS.specialisation_steps(hist, steps[:3])


def test_alignment_hand_case():
    s, gap = TS.alignment([1.0, 0.0], -0.5, [2.0, 2.0], 1.0)
    assert math.isclose(s, math.sqrt(0.5)) and math.isclose(gap, abs(1 / math.sqrt(8) + 0.5))
    assert TS.alignment([0.0, 3.0], 0.3, [0.0, 6.0], 0.6) == (0.0, 0.0)
    with pytest.raises(ValueError, match="non-zero"):
        TS.alignment([0.0, 0.0], 0.0, [1.0, 0.0], 0.0)


# ---------------------------------------------------------------------------------------------- data sets

def test_axis_augment_matches_a_loop():
    X = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    A = TS.axis_augment(X, 0.25)
    want = [*X]
    for x in X:
        for u in range(3):
            e = np.eye(3)[u]
            want += [x + 0.25 * e, x - 0.25 * e]
    assert np.array_equal(A, np.array(want))


def test_teacher_aware_augment_matches_a_loop():
    T = TS.make_teacher(3, 2, 1, seed=0)
    X = TS.gaussian_inputs(200, 3, std=1.0, seed=1)
    A = TS.teacher_aware_augment(X, T, 0.1, 0.2)
    want = [*X]
    (W1, b1), _ = T
    for j in range(2):
        u = W1[j] / np.linalg.norm(W1[j])
        near = [x for x in X if abs(W1[j] @ x + b1[j]) / np.linalg.norm(W1[j]) <= 0.2]
        want += [x + 0.1 * u for x in near] + [x - 0.1 * u for x in near]
    assert len(want) > 200 and np.allclose(A, np.array(want))


def test_teacher_aware_inputs_structure():
    T = TS.make_teacher(4, 3, 2, bias=0.0, seed=0)
    X = TS.teacher_aware_inputs(T, 20, std=1.5, alpha=(1.0, 2.0), seed=0)
    k = math.ceil(20 / 9)
    assert X.shape == (9 * k, 4) and np.allclose(np.linalg.norm(X, axis=1), 1.5 * 2.0)
    # with zero bias the rescaling keeps the base points on teacher j's boundary and the shifts along w_j
    W1 = T[0][0]
    for j in range(3):
        base, plus, minus = X[3 * j * k:(3 * j + 1) * k], X[(3 * j + 1) * k:(3 * j + 2) * k], X[(3 * j + 2) * k:(3 * j + 3) * k]
        assert np.allclose(base @ W1[j], 0, atol=1e-12)
        assert np.all(plus @ W1[j] > 0) and np.all(minus @ W1[j] < 0)
    assert np.array_equal(X, TS.teacher_aware_inputs(T, 20, std=1.5, seed=0))


def test_data_set_functions_reject_bad_input():
    T = TS.make_teacher(3, 2, 1, seed=0)
    with pytest.raises(ValueError, match="delta"):
        TS.axis_augment(np.ones((2, 3)), 0.0)
    with pytest.raises(ValueError, match="columns"):
        TS.teacher_aware_augment(np.ones((2, 4)), T, 0.1, 0.1)
    with pytest.raises(ValueError, match="alpha"):
        TS.teacher_aware_inputs(T, 10, alpha=(2.0, 1.0))
    with pytest.raises(ValueError, match="p"):
        TS.make_teacher(3, 2, 1, p=-1.0)
    with pytest.raises(ValueError, match="scale"):
        TS.make_student(3, 2, 1, scale=0.0)


# ---------------------------------------------------------------------------------------------- deep teachers

def deep_setup(S=None, tw=(5, 4), sw=(7, 6), d=3, C=2, N=30, seed=0):
    X = TS.gaussian_inputs(N, d, std=1.0, seed=seed)
    T = TS.make_teacher_deep(d, list(tw), C, X, seed=seed + 1)
    st = TS.make_student_deep(d, list(sw), C, S=S, scale=1.0, seed=seed + 2)
    return T, st, X


def autograd_gd_step(teacher, student, x, lr):
    """One SGD step on ½‖f* − f‖² averaged over the rows of x, by torch autograd (any depth)."""
    def f(net, h):
        for i, (W, b) in enumerate(net):
            h = h @ W.T + b
            h = h if i == len(net) - 1 else torch.relu(h)
        return h
    T = [(torch.tensor(W), torch.tensor(b)) for W, b in teacher]
    S = [(torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True)) for W, b in student]
    xt = torch.tensor(x)
    (0.5 * ((f(T, xt) - f(S, xt)) ** 2).sum(1).mean()).backward()
    return [((W - lr * W.grad).detach().numpy(), (b - lr * b.grad).detach().numpy()) for W, b in S]


def test_make_teacher_deep_is_regular_median_tuned_and_standardised():
    X = TS.gaussian_inputs(101, 4, std=2.0, seed=0)
    T = TS.make_teacher_deep(4, [6, 5], 3, X, seed=1)
    assert [W.shape for W, _ in T] == [(6, 4), (5, 6), (3, 5)] and [b.shape for _, b in T] == [(6,), (5,), (3,)]
    f = X
    for W, b in T[:-1]:
        assert np.allclose(np.linalg.norm(W, axis=1), 1.0)
        z = f @ W.T + b
        assert np.all((z > 0).sum(0) == 50) and np.all((z < 0).sum(0) == 50)   # median: half active (N odd)
        f = np.maximum(z, 0)
    Y = f @ T[-1][0].T + T[-1][1]
    assert np.allclose(Y.mean(0), 0, atol=1e-12) and np.allclose(Y.std(0, ddof=1), 1.0)   # torch.std: unbiased
    # every layer's rows: the code's init_separate_w (distinct, non-zero rows from {-1, -0.75, ..., 1}), each
    # normalised; the output layer divided by the output's std on top; per layer a seed drawn from `seed`
    rng = np.random.default_rng(1)
    for l, (W, _) in enumerate(T):
        raw = TS.discrete_distinct_rows(*W.shape, int(rng.integers(2 ** 31)))
        unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
        if l < len(T) - 1:
            assert np.allclose(W, unit, rtol=0, atol=1e-15)
        else:
            assert np.allclose(W * np.linalg.norm(W, axis=1, keepdims=True) ** -1, unit, atol=1e-12)
        assert set(np.unique(raw)) <= set(TS.CHOICES) and len({tuple(r) for r in raw}) == len(raw)
    # an even number of tuning inputs: torch's median is the lower middle value, so exactly half are active
    Xe = TS.gaussian_inputs(100, 4, seed=3)
    (W, b), *_ = TS.make_teacher_deep(4, [6], 2, Xe, seed=1)
    z = Xe @ W.T + b
    assert np.all((z > 0).sum(0) == 50) and np.all((z < 0).sum(0) == 49) and np.all((z == 0).sum(0) == 1)
    assert np.allclose(TS.deep_activations(T, X)[1], Y)
    again = TS.make_teacher_deep(4, [6, 5], 3, X, seed=1)
    other = TS.make_teacher_deep(4, [6, 5], 3, X, seed=2)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(T, again)) and not np.allclose(T[0][0], other[0][0])


def test_make_teacher_deep_rejects_bad_input():
    X = TS.gaussian_inputs(10, 4, seed=0)
    with pytest.raises(ValueError, match=r"X_tune must have d = 3 columns, got 4"):
        TS.make_teacher_deep(3, [2], 1, X)
    with pytest.raises(ValueError, match=r"^X_tune gives a constant teacher output: it needs more varied rows"):
        TS.make_teacher_deep(4, [2], 1, np.ones((5, 4)))
    with pytest.raises(ValueError, match=r"widths\[1\]"):
        TS.make_teacher_deep(4, [2, 0], 1, X)
    with pytest.raises(ValueError, match="widths"):
        TS.make_teacher_deep(4, [], 1, X)


def test_make_student_deep_default_init_bounds():
    st = TS.make_student_deep(4, [300, 2], 3, S=2, scale=0.5, seed=0)
    assert [W.shape for W, _ in st] == [(2, 300, 4), (2, 2, 300), (2, 3, 2)]
    assert [b.shape for _, b in st] == [(2, 300), (2, 2), (2, 3)]
    for (W, b), fan_in in zip(st, (4, 300, 2)):
        r = 0.5 / math.sqrt(fan_in)
        assert np.abs(W).max() <= r and np.abs(b).max() <= r and b.min() < 0 < b.max()
    W1 = st[0][0]
    assert W1.max() > 0.95 * 0.25 and W1.min() < -0.95 * 0.25        # uniform over the whole range
    assert TS.make_student_deep(4, [3], 2, seed=0)[0][0].shape == (3, 4)
    default = np.abs(TS.make_student_deep(4, [300], 2)[0][0]).max()          # default scale 1 (the code's, reset), seed 0
    assert 0.95 * 0.5 < default <= 0.5
    assert np.array_equal(TS.make_student_deep(4, [3], 2)[1][0], TS.make_student_deep(4, [3], 2, scale=1.0, seed=0)[1][0])
    assert not np.allclose(TS.make_student_deep(4, [3], 2, seed=1)[0][0], TS.make_student_deep(4, [3], 2, seed=0)[0][0])
    with pytest.raises(ValueError, match="scale"):
        TS.make_student_deep(4, [3], 2, scale=0.0)


def test_deep_activations_match_a_loop():
    T, st, X = deep_setup(S=2)
    H, Y = TS.deep_activations(st, X)
    assert [h.shape for h in H] == [(2, 30, 7), (2, 30, 6)] and Y.shape == (2, 30, 2)
    for s in range(2):
        for i in (0, 13, 29):
            h1 = np.maximum(st[0][0][s] @ X[i] + st[0][1][s], 0)
            h2 = np.maximum(st[1][0][s] @ h1 + st[1][1][s], 0)
            assert np.allclose(H[0][s, i], h1) and np.allclose(H[1][s, i], h2)
            assert np.allclose(Y[s, i], st[2][0][s] @ h2 + st[2][1][s])
    with pytest.raises(ValueError, match=r"X must have 3 columns \(the net's inputs\), got 2"):
        TS.deep_activations(st, X[:, :2])


def test_layer_best_correlations_per_layer_against_brute_force():
    T, st, X = deep_setup(S=2)
    got = TS.layer_best_correlations(T, st, X)
    Ht, _ = TS.deep_activations(T, X)
    Hs, _ = TS.deep_activations(st, X)
    assert [g.shape for g in got] == [(2, 5), (2, 4)]
    for l in range(2):
        for s in range(2):
            assert np.allclose(got[l][s], brute_best(Ht[l], Hs[l][s]), atol=1e-12)
    one = TS.layer_best_correlations(T, [(W[1], b[1]) for W, b in st], X)
    assert all(np.allclose(o, g[1], atol=1e-14) for o, g in zip(one, got))
    # a student holding a scaled copy of the teacher in its first nodes, layer by layer: correlation 1 everywhere
    copy = [(W[0].copy(), b[0].copy()) for W, b in st]
    (W1, b1), (W2, b2), (W3, b3) = copy
    W1[:5], b1[:5] = 2 * T[0][0], 2 * T[0][1]
    W2[:] = 0
    W2[:4, :5], b2[:4] = 0.5 * T[1][0], T[1][1]
    assert np.allclose(np.concatenate(TS.layer_best_correlations(T, copy, X)), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="same depth, got 3 and 2 layers"):
        TS.layer_best_correlations(T, st[1:], X)


@pytest.mark.parametrize("tw, sw", [((5, 4), (7, 6)), ((3,), (6,)), ((4, 3, 3), (5, 6, 4))])
def test_train_deep_gd_step_equals_autograd_and_lemma1(tw, sw):
    T, st, X = deep_setup(S=2, tw=tw, sw=sw)
    got, _ = TS.train_deep(T, st, X, 1, 0.1, batch_size=None)
    for s in range(2):
        one = [(W[s], b[s]) for W, b in st]
        want = autograd_gd_step(T, one, X, 0.1)
        # Lemma 1 + Eq. 1: dW_l = E_x[g_l f_{l-1}^T] with g_l from the recursive rule D_l[A_l f*_l - B_l f_l]
        g = TS.recursive_gradients(T, one, X)
        fs = [X] + TS.deep_activations(one, X)[0]
        for l, ((W, b), (Wr, br), (W0, b0)) in enumerate(zip(got, want, one)):
            assert np.max(np.abs(W[s] - Wr)) < 1e-12 and np.max(np.abs(b[s] - br)) < 1e-12
            assert np.max(np.abs(W[s] - (W0 + 0.1 * g[l].T @ fs[l] / len(X)))) < 1e-10
            assert np.max(np.abs(b[s] - (b0 + 0.1 * g[l].mean(0)))) < 1e-10
    assert max(np.abs(W[0] - W0).max() for (W, _), (W0, _) in zip(got, st)) > 1e-3   # it moved


def test_train_deep_sgd_follows_the_drawn_minibatches_and_snapshots():
    T, st, X = deep_setup(S=2)
    got, snaps = TS.train_deep(T, st, X, 4, 0.05, batch_size=5, seed=7, record_at=[0, 2, 4])
    rng = np.random.default_rng(7)
    ref = [[(W[s], b[s]) for W, b in st] for s in range(2)]
    for t in range(4):
        idx = rng.integers(30, size=(2, 5))
        if t == 2:
            for s in range(2):
                assert all(np.allclose(a[s], r) for (a, _), (r, _) in zip(snaps[2], ref[s]))
        ref = [autograd_gd_step(T, ref[s], X[idx[s]], 0.05) for s in range(2)]
    for s in range(2):
        for (W, b), (Wr, br) in zip(got, ref[s]):
            assert np.allclose(W[s], Wr, atol=1e-12) and np.allclose(b[s], br, atol=1e-12)
    assert sorted(snaps) == [0, 2, 4] and np.array_equal(snaps[0][0][0], st[0][0])
    assert np.array_equal(snaps[4][2][0], got[2][0])
    one, snaps1 = TS.train_deep(T, [(W[0], b[0]) for W, b in st], X, 3, 0.05, batch_size=None, record_at=[3])
    assert one[0][0].shape == (7, 3) and snaps1[3][0][0].shape == (7, 3) and np.array_equal(snaps1[3][0][0], one[0][0])
    assert np.array_equal(st[0][0], deep_setup(S=2)[1][0][0])          # the input student is untouched


def test_train_deep_many_steps_reduce_the_loss_and_divergence_raises():
    T, st, X = deep_setup(S=2, N=200)
    out, _ = TS.train_deep(T, st, X, 300, 0.05, batch_size=16, seed=1)
    loss = lambda net: ((TS.deep_activations(net, X)[1] - TS.deep_activations(T, X)[1]) ** 2).sum(-1).mean(-1)  # noqa: E731
    assert np.all(loss(out) < 0.5 * loss(st))
    with pytest.raises(TrainingDivergedError, match="lr="):
        TS.train_deep(T, st, 1e3 * X, 300, 10.0, batch_size=None)


def test_train_deep_rejects_bad_input():
    T, st, X = deep_setup()
    with pytest.raises(ValueError, match="same depth, got 3 and 2 layers"):
        TS.train_deep(T, st[1:], X, 1, 0.1)
    with pytest.raises(ValueError, match=r"X has 2 columns but the teacher takes 3 inputs and the student 3"):
        TS.train_deep(T, st, X[:, :2], 1, 0.1)
    with pytest.raises(ValueError, match="same number of outputs, got 2 and 3"):
        TS.train_deep(T, TS.make_student_deep(3, [7, 6], 3), X, 1, 0.1)
    with pytest.raises(ValueError, match="single net"):
        TS.train_deep([(W[None], b[None]) for W, b in T], st, X, 1, 0.1)
    for kwargs, match in [(dict(steps=-1), "steps"), (dict(lr=0.0), "lr"), (dict(batch_size=0), "batch_size"),
                          (dict(seed=-1), "seed"), (dict(record_at=[2]), "record_at")]:
        with pytest.raises(ValueError, match=match):
            TS.train_deep(T, st, X, **(dict(steps=1, lr=0.1) | kwargs))


def test_train_deep_learning_rate_schedule_switches_at_its_steps():
    """A schedule {0: a, k: b} is k GD steps at a followed by GD steps at b (GD: no draws to continue);
    under SGD it keeps the one stream of minibatch draws, so the first k steps match a constant-rate run."""
    T, st, X = deep_setup(S=2)
    got, _ = TS.train_deep(T, st, X, 5, {0: 0.1, 2: 0.03}, batch_size=None)
    first, _ = TS.train_deep(T, st, X, 2, 0.1, batch_size=None)
    want, _ = TS.train_deep(T, first, X, 3, 0.03, batch_size=None)
    for (W, b), (Wr, br) in zip(got, want):
        assert np.allclose(W, Wr, rtol=0, atol=1e-14) and np.allclose(b, br, rtol=0, atol=1e-14)
    step = autograd_gd_step(T, [(W[0], b[0]) for W, b in first], X, 0.03)
    one, _ = TS.train_deep(T, st, X, 3, {0: 0.1, 2: 0.03}, batch_size=None)
    assert np.allclose(one[0][0][0], step[0][0], atol=1e-13)
    sgd, snaps = TS.train_deep(T, st, X, 6, {0: 0.05, 4: 0.5}, batch_size=4, seed=3, record_at=[4])
    plain, _ = TS.train_deep(T, st, X, 4, 0.05, batch_size=4, seed=3)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(snaps[4], plain))
    assert not np.allclose(sgd[0][0], TS.train_deep(T, st, X, 6, 0.05, batch_size=4, seed=3)[0][0][0])
    for lr, match in [({2: 0.1}, r"lr \(a learning-rate schedule\) must give the rate at step 0, got steps \[2\]"),
                      ({0: 0.1, 3: -1.0}, r"lr \(the learning rate from step 3\) must be"),
                      ({0: 0.1, -1: 0.2}, "lr schedule step"), (0.0, r"lr \(the learning rate\)")]:
        with pytest.raises(ValueError, match=match):
            TS.train_deep(T, st, X, 2, lr)


# ---------------------------------------------------------------------------------------------- bad input, word for word

def _bad_calls():
    """(call, exact message start): one bad argument each, the message naming it as the function does."""
    import re
    T, st, X = small_setup()
    Tb = [(np.stack([W, W]), np.stack([b, b])) for W, b in T]
    stb3 = small_setup(S=3)[1]
    st3 = TS.make_student(3, 5, 2)
    D, Ds, DX = deep_setup()
    ts = lambda *a, **k: (lambda: TS.train_two_layer(*a, **k))  # noqa: E731
    cases = [
        (lambda: TS.discrete_distinct_rows("a", 2), "rows must be an int"),
        (lambda: TS.discrete_distinct_rows(2, "a"), "cols must be an int"),
        (lambda: TS.discrete_distinct_rows(2, 2, choices=np.ones((2, 2))), "choices must be an array with 1 dimensions"),
        (lambda: TS.discrete_distinct_rows(2, 2, seed=-1), "seed must be an int >= 0"),
        (lambda: TS.discrete_distinct_rows(3, 2, choices=(1.0, 1.0)), "choices must hold at least two distinct values, got [1.0, 1.0]"),
        (lambda: TS.discrete_distinct_rows(2, 1, choices=(0.5, 1.0)),   # [0.5] and [1.0] point the same way
         "could not draw 2 distinct non-zero rows of length 1 from [0.5, 1.0]"),
        (lambda: TS.make_teacher("a", 2, 1), "d must be an int"),
        (lambda: TS.make_teacher(2, "a", 1), "m must be an int"),
        (lambda: TS.make_teacher(2, 2, "a"), "C must be an int"),
        (lambda: TS.make_teacher(2, 2, 1, p=-1.0), "p (the fan-out decay exponent) must be"),
        (lambda: TS.make_teacher(2, 2, 1, bias="x"), "bias must be a real number"),
        (lambda: TS.make_teacher(2, 2, 1, seed=-1), "seed must be an int >= 0"),
        (lambda: TS.make_student("a", 2, 1), "d must be an int"),
        (lambda: TS.make_student(2, "a", 1), "n must be an int"),
        (lambda: TS.make_student(2, 2, "a"), "C must be an int"),
        (lambda: TS.make_student(2, 2, 1, S="a"), "S must be an int"),
        (lambda: TS.make_student(2, 2, 1, scale=0), "scale must be a finite number > 0"),
        (lambda: TS.gaussian_inputs("a", 2), "N must be an int"),
        (lambda: TS.gaussian_inputs(2, "a"), "d must be an int"),
        (lambda: TS.gaussian_inputs(2, 2, std=0), "std must be a finite number > 0"),
        (lambda: TS.hidden_and_output(3, X), "net must be a list or tuple"),
        (lambda: TS.hidden_and_output([], X), "net must be a sequence of at least 1 item(s)"),
        (lambda: TS.hidden_and_output(st[:1], X), "net must be a list of 2 (W, b) pairs (a two-layer net), got 1 layer(s)"),
        (lambda: TS.hidden_and_output([st[0], 3], X), "net[1] must be a (W, b) pair, got 3"),
        (lambda: TS.hidden_and_output([(np.ones(4), np.ones(4)), st[1]], X), "net[0] W must be an array with 2 or 3 dimensions"),
        (lambda: TS.hidden_and_output([(st[0][0], np.ones((1, 1, 5))), st[1]], X), "net[0] b must be an array with 1 or 2 dimensions"),
        (lambda: TS.hidden_and_output([(st[0][0], st[0][1][:-1]), st[1]], X),
         "net[0]: b must have shape (5,) to match W of shape (5, 4), got (4,)"),
        (lambda: TS.hidden_and_output([st[0], (st[1][0][None], st[1][1][None])], X),
         "net: every layer needs the same leading (batch) axes, got () and (1,)"),
        (lambda: TS.hidden_and_output([st[0], (st[1][0][:, :4], st[1][1])], X), "net[1] W has 4 inputs but layer 0 has 5 outputs"),
        (lambda: TS.hidden_and_output(st, X[:, 0]), "X must be an array with 2 dimensions"),
        (lambda: TS.hidden_and_output(st, X[:, :3]), "X must have 4 columns (the net's inputs), got 3"),
        (lambda: TS.two_layer_flops("a", 1, 1, 1), "d must be an int"),
        (lambda: TS.two_layer_flops(1, "a", 1, 1), "n must be an int"),
        (lambda: TS.two_layer_flops(1, 1, "a", 1), "C must be an int"),
        (lambda: TS.two_layer_flops(1, 1, 1, "a"), "batch must be an int"),
        (lambda: TS.correlation_matrix(np.ones(3), np.ones((3, 2))), "H_teacher must be an array with 2 dimensions"),
        (lambda: TS.correlation_matrix(np.ones((3, 2)), np.ones(3)), "H_student must be an array with 2 dimensions"),
        (lambda: TS.correlation_matrix(np.ones((3, 2)), np.ones((4, 5))),
         "H_teacher and H_student must have the same number of rows (samples), got 3 and 4"),
        (lambda: TS.specialisation_steps(np.ones(3), [0, 1, 2]), "best_history must be an array with 2 or 3 or 4 dimensions"),
        (lambda: TS.specialisation_steps(np.ones((3, 2)), np.ones((3, 1))), "steps must be an array with 1 dimensions"),
        (lambda: TS.specialisation_steps(np.ones((3, 2)), [0, 1, 2], threshold=1.5), "threshold must be a finite number >= -1 and <= 1"),
        (lambda: TS.specialisation_steps(np.ones((3, 2)), [0, 1, 2], threshold=-1.5), "threshold must be a finite number >= -1 and <= 1"),
        (lambda: TS.specialisation_steps(np.ones((3, 2)), [0, 1]), "best_history has 3 recorded steps but steps has 2"),
        (lambda: TS.specialisation_steps(np.ones((3, 2)), [0, 1, 1]), "steps must be strictly increasing"),
        (lambda: TS.fan_out_norms(3), "net must be a list or tuple"),
        (lambda: TS.alignment(np.ones((2, 2)), 0.0, [1.0, 0.0], 0.0), "w_teacher must be an array with 1 dimensions"),
        (lambda: TS.alignment([1.0, 0.0], 0.0, [1.0, 0.0, 0.0], 0.0), "w_student must be an array of shape (2,)"),
        (lambda: TS.alignment([1.0, 0.0], "x", [1.0, 0.0], 0.0), "b_teacher must be a real number"),
        (lambda: TS.alignment([1.0, 0.0], 0.0, [1.0, 0.0], "x"), "b_student must be a real number"),
        (lambda: TS.alignment([1.0, 0.0], 0.0, [0.0, 0.0], 0.0), "w_teacher and w_student must be non-zero to be rescaled to regular weights"),
        (lambda: TS.prune_students(3, [True]), "student must be a list or tuple"),
        (lambda: TS.prune_students(st, "x"), "keep must be a numeric array"),
        (lambda: TS.prune_students(st, np.ones(5)), "keep must be a boolean array of shape (5,), got array of shape (5,)"),
        (lambda: TS.prune_students(st, np.ones(4, bool)), "keep must be a boolean array of shape (5,), got array of shape (4,)"),
        (lambda: TS.prune_students(stb3, np.ones(5, bool)), "keep must be a boolean array of shape (3, 5), got array of shape (5,)"),
        (ts(3, st, X, 1, 0.1), "teacher must be a list or tuple"),
        (ts(T, 3, X, 1, 0.1), "student must be a list or tuple"),
        (ts(T, np.ones((2, 2)), X, 1, 0.1), "student[0] W must be an array with 2 or 3 dimensions"),
        (ts(T, [], X, 1, 0.1), "student must be a sequence of at least 1 item(s)"),
        (ts(T, [3, st[1]], X, 1, 0.1), "student[0] must be a (W, b) pair, got 3"),
        (ts(T, st, X[:, 0], 1, 0.1), "X must be an array with 2 dimensions"),
        (ts(T, st3, X, 1, 0.1), "X has 4 columns but the teacher takes 4 inputs and the student 3"),
        (ts(T, st, X[:, :3], 1, 0.1), "X has 3 columns but the teacher takes 4 inputs and the student 4"),
        (ts(T, TS.make_student(4, 5, 3), X, 1, 0.1), "teacher and student must have the same number of outputs, got 2 and 3"),
        (ts(Tb, stb3, X, 1, 0.1), "a batched teacher of 2 nets needs a student batch of the same size, got student W of shape (3, 5, 4)"),
        (ts(Tb, st, X, 1, 0.1), "a batched teacher of 2 nets needs a student batch of the same size, got student W of shape (5, 4)"),
        (ts(T, st, X, -1, 0.1), "steps must be an int >= 0"),
        (ts(T, st, X, 1, 0.0), "lr (the learning rate) must be a finite number > 0"),
        (ts(T, st, X, 1, 0.1, batch_size=0), "batch_size must be an int >= 1"),
        (ts(T, st, X, 1, 0.1, seed=-1), "seed must be an int >= 0"),
        (lambda: TS.train_with_snapshots(T, st, X, 2, 0.1, 3), "record_at must be a list or tuple"),
        (lambda: TS.train_with_snapshots(T, st, X, 2, 0.1, [3]), "record_at step must be an int >= 0 and <= 2"),
        (lambda: TS.recursive_gradients(Tb, st, X), "teacher must be a single net (W of shape (out, in)), got leading axes (2,)"),
        (lambda: TS.recursive_gradients(T, Tb, X), "student must be a single net (W of shape (out, in)), got leading axes (2,)"),
        (lambda: TS.recursive_gradients(T, st, X[:, 0]), "X must be an array with 2 dimensions"),
        (lambda: TS.recursive_gradients(T, st3, X), "X has 4 columns but the student takes 3 inputs"),
        (lambda: TS.recursive_gradients(TS.make_teacher(3, 3, 2), st3, X[:, :3] if False else X), "X has 4 columns but the teacher takes 3 inputs"),
        (lambda: TS.recursive_gradients(T, TS.make_student(4, 5, 3), X), "teacher and student must have the same number of outputs"),
        (lambda: TS.recursive_gradients(T, st[:1], X), "teacher and student must have the same depth, got 2 and 1 layers"),
        (lambda: TS.axis_augment(np.ones(3), 0.1), "X must be an array with 2 dimensions"),
        (lambda: TS.axis_augment(X, 0.0), "delta must be a finite number > 0"),
        (lambda: TS.teacher_aware_augment(np.ones(3), T, 0.1, 0.1), "X must be an array with 2 dimensions"),
        (lambda: TS.teacher_aware_augment(X, 3, 0.1, 0.1), "teacher must be a list or tuple"),
        (lambda: TS.teacher_aware_augment(X, Tb, 0.1, 0.1), "teacher must be a single net"),
        (lambda: TS.teacher_aware_augment(X[:, :3], T, 0.1, 0.1), "X has 3 columns but the teacher takes 4 inputs"),
        (lambda: TS.teacher_aware_augment(X, T, 0.0, 0.1), "delta must be a finite number > 0"),
        (lambda: TS.teacher_aware_augment(X, T, 0.1, 0.0), "eps must be a finite number > 0"),
        (lambda: TS.teacher_aware_inputs(3, 10), "teacher must be a list or tuple"),
        (lambda: TS.teacher_aware_inputs(Tb, 10), "teacher must be a single net"),
        (lambda: TS.teacher_aware_inputs(T, "a"), "N must be an int"),
        (lambda: TS.teacher_aware_inputs(T, 10, std=0.0), "std must be a finite number > 0"),
        (lambda: TS.teacher_aware_inputs(T, 10, alpha=(2.0, 1.0)), "alpha must be a finite interval with lo < hi"),
        (lambda: TS.teacher_aware_inputs(T, 10, seed=-1), "seed must be an int >= 0"),
        (lambda: TS.make_teacher_deep("a", [2], 1, DX), "d must be an int"),
        (lambda: TS.make_teacher_deep(3, 2, 1, DX), "widths must be a list or tuple"),
        (lambda: TS.make_teacher_deep(3, [2, "a"], 1, DX), "widths[1] must be an int"),
        (lambda: TS.make_teacher_deep(3, [2], "a", DX), "C must be an int"),
        (lambda: TS.make_teacher_deep(3, [2], 1, DX[:, 0]), "X_tune must be an array with 2 dimensions"),
        (lambda: TS.make_teacher_deep(3, [2], 1, DX, seed=-1), "seed must be an int >= 0"),
        (lambda: TS.make_student_deep("a", [2], 1), "d must be an int"),
        (lambda: TS.make_student_deep(3, [0], 1), "widths[0] must be an int >= 1"),
        (lambda: TS.make_student_deep(3, [2], "a"), "C must be an int"),
        (lambda: TS.make_student_deep(3, [2], 1, S="a"), "S must be an int"),
        (lambda: TS.make_student_deep(3, [2], 1, seed=-1), "seed must be an int >= 0"),
        (lambda: TS.make_student_deep(3, [2], 1, scale=0.0), "scale must be a finite number > 0"),
        (lambda: TS.deep_activations(3, DX), "net must be a list or tuple"),
        (lambda: TS.deep_activations(Ds, DX[:, 0]), "X must be an array with 2 dimensions"),
        (lambda: TS.deep_activations(Ds, DX[:, :2]), "X must have 3 columns (the net's inputs), got 2"),
        (lambda: TS.layer_best_correlations(3, Ds, DX), "teacher must be a list or tuple"),
        (lambda: TS.layer_best_correlations(D, 3, DX), "student must be a list or tuple"),
        (lambda: TS.layer_best_correlations([(W[None], b[None]) for W, b in D], Ds, DX), "teacher must be a single net"),
        (lambda: TS.layer_best_correlations(D, Ds, DX[:, 0]), "X must be an array with 2 dimensions"),
        (lambda: TS.train_deep(3, Ds, DX, 1, 0.1), "teacher must be a list or tuple"),
        (lambda: TS.train_deep(D, 3, DX, 1, 0.1), "student must be a list or tuple"),
        (lambda: TS.train_deep(D, Ds, DX[:, 0], 1, 0.1), "X must be an array with 2 dimensions"),
        (lambda: TS.train_deep(D, TS.make_student_deep(2, [7, 6], 2), DX, 1, 0.1),
         "X has 3 columns but the teacher takes 3 inputs and the student 2"),
        (lambda: TS.train_deep(D, Ds, DX, 1, 0.1, record_at=3), "record_at must be a list or tuple"),
        (lambda: TS.train_deep(TS.make_teacher_deep(2, [5, 4], 2, DX[:, :2]), Ds, DX, 1, 0.1),
         "X has 3 columns but the teacher takes 2 inputs and the student 3"),
    ]
    return [(call, "^" + re.escape(msg)) for call, msg in cases]


@pytest.mark.parametrize("k", range(len(_bad_calls())))
def test_every_bad_argument_gets_the_functions_own_message(k):
    call, match = _bad_calls()[k]
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------------- defaults and edge values

def test_defaults_are_the_documented_ones():
    assert np.array_equal(TS.discrete_distinct_rows(3, 2), TS.discrete_distinct_rows(3, 2, seed=0))
    for (W, b), (Wr, br) in zip(TS.make_teacher(4, 3, 2), TS.make_teacher(4, 3, 2, p=1.0, bias=-0.1, seed=0)):
        assert np.array_equal(W, Wr) and np.array_equal(b, br)
    # make_teacher's fan-out: the seed + 1 draw of discrete_distinct_rows, column j divided by (j+1)^p
    W2 = TS.make_teacher(4, 3, 2, p=0.5, seed=5)[1][0]
    assert np.allclose(W2, TS.discrete_distinct_rows(2, 3, 6) / np.sqrt([1.0, 2.0, 3.0]))
    st = TS.make_student(30, 40, 20)
    assert abs(st[0][0].std() - 0.005) < 0.0005 and np.array_equal(st[0][0], TS.make_student(30, 40, 20, seed=0)[0][0])
    assert np.array_equal(TS.gaussian_inputs(5, 3), TS.gaussian_inputs(5, 3, std=1.5, seed=0))
    assert abs(TS.gaussian_inputs(20000, 2).std() - 1.5) < 0.03


def test_hidden_and_output_use_the_biases():
    T, st, X = small_setup(S=2)
    rng = np.random.default_rng(3)
    st = [(W, rng.standard_normal(b.shape)) for W, b in st]
    H, Y = TS.hidden_and_output(st, X)
    h = np.maximum(np.einsum("snd,id->sin", st[0][0], X) + st[0][1][:, None, :], 0)
    assert np.allclose(H, h) and np.allclose(Y, np.einsum("scn,sin->sic", st[1][0], h) + st[1][1][:, None, :])
    H1, Y1 = TS.hidden_and_output(T, X)
    assert np.allclose(Y1, np.maximum(X @ T[0][0].T - 0.1, 0) @ T[1][0].T - 0.1)


def test_correlation_constant_test_is_relative_to_the_column_scale():
    rng = np.random.default_rng(0)
    N = 100
    base = rng.standard_normal(N)
    H = np.stack([1e6 + 5e-7 * rng.standard_normal(N),   # constant up to rounding-size noise: correlation 0
                  1e-14 * base,                          # tiny but a real signal: correlates with itself
                  base], axis=1)
    C = TS.correlation_matrix(H, H)
    assert np.all(C[0] == 0) and np.all(C[:, 0] == 0)
    assert abs(C[1, 1] - 1) < 1e-12 and abs(C[1, 2] - 1) < 1e-12 and abs(C[2, 2] - 1) < 1e-12


def test_alignment_of_a_unit_student_and_antiparallel_weights():
    s, gap = TS.alignment([3.0, 4.0], 1.0, [1.0, 0.0], 0.5)     # ||w_student|| = 1 exactly
    assert math.isclose(s, 0.8) and math.isclose(gap, abs(0.5 - 0.2))
    s, gap = TS.alignment([0.1, 0.2, 0.3], 0.0, [-0.3, -0.6, -0.9], 0.0)
    assert s < 1e-7 and gap == 0.0


def test_batched_teacher_with_minibatches_equals_autograd_per_student():
    T1, st, X = small_setup(S=2, seed=0)
    T2 = TS.make_teacher(4, 3, 2, seed=7)
    Tb = [(np.stack([T1[l][0], T2[l][0]]), np.stack([T1[l][1], T2[l][1]])) for l in range(2)]
    got = TS.train_two_layer(Tb, st, X, 1, 0.1, batch_size=6, seed=4)
    idx = np.random.default_rng(4).integers(len(X), size=(1, 2, 6))[0]
    for s, T in enumerate((T1, T2)):
        want = autograd_step(T, [(W[s], b[s]) for W, b in st], X[idx[s]], 0.1)
        for (W, b), (Wr, br) in zip(got, want):
            assert np.allclose(W[s], Wr, atol=1e-13) and np.allclose(b[s], br, atol=1e-13)


def test_a_node_exactly_at_its_kink_gets_no_gradient_like_autograd():
    T, st, X = small_setup()
    st[0][0][2] = 0.0                       # node 2: pre-activation exactly 0 on every input
    got = TS.train_two_layer(T, st, X, 1, 0.1, batch_size=None)
    want = autograd_step(T, st, X, 0.1)
    assert np.array_equal(got[0][0][2], np.zeros(4)) and got[0][1][2] == 0.0
    for (W, b), (Wr, br) in zip(got, want):
        assert np.allclose(W, Wr, atol=1e-13) and np.allclose(b, br, atol=1e-13)


@pytest.mark.parametrize("steps, step", [(300, 256), (10, 10)])
def test_divergence_is_reported_at_the_checked_step(steps, step):
    import warnings
    T, st, X = small_setup()
    D, Ds, DX = deep_setup()
    match = rf"^the training student weights became NaN or infinite by step {step} with lr=100.0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the trainers silence numpy's overflow warnings and raise their own error
        with pytest.raises(TrainingDivergedError, match=match):
            TS.train_two_layer(T, st, 1e30 * X, steps, 100.0, batch_size=None)
        with pytest.raises(TrainingDivergedError, match=match):
            TS.train_with_snapshots(T, st, 1e30 * X, steps, 100.0, [0], batch_size=None)
        with pytest.raises(TrainingDivergedError, match=match):
            TS.train_deep(D, Ds, 1e30 * DX, steps, 100.0, batch_size=None)


def _numpy_step(teacher, student, x, lr):
    (T1, c1), (T2, c2) = teacher
    (W1, b1), (W2, b2) = student
    z = x @ W1.T + b1
    h = np.maximum(z, 0)
    e = (np.maximum(x @ T1.T + c1, 0) @ T2.T + c2) - (h @ W2.T + b2)
    g1 = (e @ W2) * (z > 0)
    return [(W1 + lr * g1.T @ x / len(x), b1 + lr * g1.mean(0)), (W2 + lr * e.T @ h / len(x), b2 + lr * e.mean(0))]


def test_specialisation_steps_take_four_dimensional_histories():
    hist = np.zeros((2, 3, 4, 2))
    hist[..., 2:, :] = 1.0
    assert np.array_equal(TS.specialisation_steps(hist, [0, 10, 20, 30], 0.5), np.full((2, 3, 2), 20.0))


def test_deep_defaults_and_kinks():
    T, st, X = deep_setup(S=2, N=100)
    a, sa = TS.train_deep(T, st, X, 3, 0.05)
    b, _ = TS.train_deep(T, st, X, 3, 0.05, batch_size=64, seed=0, record_at=[])
    assert sa == {} and all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    c, _ = TS.train_deep(T, st, X, 3, 0.05, batch_size=63)
    assert not np.allclose(a[0][0], c[0][0])
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(TS.make_teacher_deep(3, [4], 2, X), TS.make_teacher_deep(3, [4], 2, X, seed=0)))
    # a student node exactly at its kink (pre-activation 0 on every input) gets no gradient, as in autograd
    one = [(W[0].copy(), b[0].copy()) for W, b in st]
    one[1][0][2], one[1][1][2] = 0.0, 0.0
    got, _ = TS.train_deep(T, one, X, 1, 0.1, batch_size=None)
    want = autograd_gd_step(T, one, X, 0.1)
    for (W, b), (Wr, br) in zip(got, want):
        assert np.allclose(W, Wr, atol=1e-13) and np.allclose(b, br, atol=1e-13)
    g = TS.recursive_gradients(T, one, X)
    assert np.all(g[1][:, 2] == 0) and np.max(np.abs(g[1] - autograd_gated_gradients(T, one, X)[1])) < 1e-12


def test_teacher_aware_augment_with_unnormalised_weights_and_a_sample_on_the_band_edge():
    T = [(np.array([[2.0, 0.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([0.0]))]
    X = np.array([[0.5, 1.0], [0.75, 0.0], [0.25, 3.0]])
    A = TS.teacher_aware_augment(X, T, 0.1, 0.5)           # distances to the boundary x1 = 0: 0.5 (edge), 0.75, 0.25
    want = np.concatenate([X, X[[0, 2]] + [0.1, 0.0], X[[0, 2]] - [0.1, 0.0]])
    assert np.allclose(A, want)


def test_teacher_aware_inputs_shift_along_the_weight_and_project_onto_the_boundary():
    rng = np.random.default_rng(0)
    W1 = rng.standard_normal((3, 30))
    W1 = 2.0 * W1 / np.linalg.norm(W1, axis=1, keepdims=True)             # ||w|| = 2, bias 0
    T = [(W1, np.zeros(3)), (np.ones((2, 3)), np.zeros(2))]
    X = TS.teacher_aware_inputs(T, 900, std=1.5, alpha=(1.0, 2.0), seed=1)
    k = 100
    assert np.allclose(np.linalg.norm(X, axis=1), 1.5 * math.sqrt(30))
    for j in range(3):
        base, plus, minus = X[3 * j * k:(3 * j + 1) * k], X[(3 * j + 1) * k:(3 * j + 2) * k], X[(3 * j + 2) * k:(3 * j + 3) * k]
        assert np.max(np.abs(base @ W1[j])) < 1e-9                        # on teacher j's boundary
        # base ~ N(0, 1.5^2) on the 29-dim boundary, shifted by a w_j (a ~ U[1, 2], ||w_j|| = 2), rescaled to norm 1.5 sqrt(30):
        # the shift's share of the norm is 2a / sqrt(1.5^2 29 + 4a^2) ~ 0.37 on average
        share = (plus @ W1[j] / 2) / np.linalg.norm(plus, axis=1)
        assert 0.1 < share.min() and share.max() < 0.75                  # |base| ~ 1.5 sqrt(29), chi spread
        assert 0.3 < share.mean() < 0.44 and np.allclose(-(minus @ W1[j]).mean() / 2 / np.linalg.norm(minus, axis=1).mean(), share.mean(), atol=0.05)
    assert np.array_equal(TS.teacher_aware_inputs(T, 90), TS.teacher_aware_inputs(T, 90, std=1.5, seed=0))


def test_train_deep_one_student_without_a_batch_axis_equals_a_batch_of_one():
    T, st, X = deep_setup(S=1, N=50)
    batched, _ = TS.train_deep(T, st, X, 5, 0.05, batch_size=8, seed=3)
    single, _ = TS.train_deep(T, [(W[0], b[0]) for W, b in st], X, 5, 0.05, batch_size=8, seed=3)
    for (W, b), (Ws, bs) in zip(batched, single):
        assert Ws.shape == W.shape[1:] and np.allclose(W[0], Ws, atol=1e-14) and np.allclose(b[0], bs, atol=1e-14)
