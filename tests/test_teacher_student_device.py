"""lib.teacher_student's trainers on a device (issue 22): the CPU path unchanged for every way of naming
the CPU, bad devices refused before any work, the torch loop (the CUDA path) checked on the CPU against
the numpy loop and on the "meta" device (a stand-in for CUDA: meta tensors fail loudly when mixed with
CPU tensors or read), results back on the CPU in the types they had."""

import numpy as np
import pytest
import torch

from lib import teacher_student as TS
from lib import validate as V


def two_layer_setup(S=3, batched_teacher=False):
    T = TS.make_teacher(5, 3, 2, seed=1)
    if batched_teacher:
        T = [(np.stack([W, 0.8 * W, -W][:S]), np.stack([b] * S)) for W, b in T]
    return T, TS.make_student(5, 6, 2, S=S, scale=0.3, seed=2), TS.gaussian_inputs(60, 5, seed=3)


def deep_setup(S=2):
    X = TS.gaussian_inputs(50, 4, seed=4)
    return TS.make_teacher_deep(4, (5, 4), 2, X, seed=5), TS.make_student_deep(4, (6, 5), 2, S=S, seed=6), X


# each public trainer as f(device) -> its result; sizes cross the 256-step finite check
RUNS = {
    "train_two_layer": lambda dev, **kw: TS.train_two_layer(*two_layer_setup(), 300, 0.05, batch_size=8,
                                                             seed=7, device=dev),
    "train_two_layer_gd": lambda dev, **kw: TS.train_two_layer(*two_layer_setup(None), 20, 0.05, batch_size=None,
                                                                device=dev),
    "train_two_layer_torch": lambda dev, **kw: TS.train_two_layer(
        *(lambda T, s, X: (T, TS._as_tensors(s), X))(*two_layer_setup(2, True)), 40, 0.05, seed=8, device=dev),
    "train_with_snapshots": lambda dev, **kw: TS.train_with_snapshots(*two_layer_setup(), 300, 0.05, (0, 9, 300),
                                                                       batch_size=4, seed=9, device=dev),
    "train_deep": lambda dev, **kw: TS.train_deep(*deep_setup(), 300, 0.02, batch_size=8, seed=10,
                                                  record_at=(0, 5, 300), device=dev),
    "train_deep_gd_unbatched": lambda dev, **kw: TS.train_deep(*deep_setup(None), 20, 0.02, batch_size=None,
                                                               record_at=(20,), device=dev),
}


def leaves(result):
    """Every array of a trainer's result (nets, snapshot dicts) in a fixed order."""
    if isinstance(result, dict):
        return [x for k in sorted(result) for x in [k] + leaves(result[k])]
    if isinstance(result, (list, tuple)):
        return [x for r in result for x in leaves(r)]
    return [result]


def assert_identical(a, b, rtol=None):
    """The same structure, types, dtypes and shapes, and equal values (to ``rtol`` and atol ``rtol`` when
    given, else bit for bit); torch tensors in ``b`` must be on the CPU."""
    la, lb = leaves(a), leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert type(x) is type(y)
        if isinstance(x, int):
            assert x == y
            continue
        if isinstance(y, torch.Tensor):
            assert y.device.type == "cpu"
        assert x.dtype == y.dtype and x.shape == y.shape
        x, y = np.asarray(x), np.asarray(y)
        assert np.array_equal(x, y) if rtol is None else np.allclose(x, y, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_name_for_the_cpu_gives_the_numpy_loops_identical_numbers(name, monkeypatch):
    """REPRO_DEVICE=cpu, auto (quick scale), device="cpu" and torch.device("cpu") all run the numpy loop
    (never the torch one: its float64 sums differ in the last bits) and give bit-identical results."""
    monkeypatch.delenv("REPRO_SCALE", raising=False)
    results = []
    for env, dev in (("cpu", None), ("auto", None), ("cuda", "cpu"), ("cuda", torch.device("cpu"))):
        monkeypatch.setenv("REPRO_DEVICE", env)          # an explicit device wins over REPRO_DEVICE=cuda
        results.append(RUNS[name](dev))
    for r in results[1:]:
        assert_identical(results[0], r)

    def no_torch_loop(device):
        raise AssertionError("the torch loop ran on the CPU")
    monkeypatch.setattr(TS, "_TorchOps", no_torch_loop)
    assert_identical(results[0], RUNS[name]("cpu"))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_torch_loop_matches_the_numpy_loop_and_hands_back_the_same_types(name, monkeypatch):
    """The loop that CUDA runs, run with torch on the CPU: the same draws and the same arithmetic as the
    numpy loop (to rounding), and results of the same types on the CPU (numpy arrays, or tensors for a
    tensor student) with the same snapshot steps."""
    reference = RUNS[name]("cpu")
    monkeypatch.setattr(TS, "_ops", lambda device: TS._TorchOps(torch.device("cpu")))
    assert_identical(reference, RUNS[name]("cpu"), rtol=1e-12)


BAD = [("tpu", ValueError, "^device must be one of"), (3, TypeError, "^device must be None, a str"),
       ("meta", ValueError, "^device must be one of")]


@pytest.mark.parametrize("device, error, match", BAD)
@pytest.mark.parametrize("trainer", ["train_two_layer", "train_with_snapshots", "train_deep"])
def test_a_bad_device_is_refused_before_any_work(trainer, device, error, match, monkeypatch):
    """The as_device error, raised before the other arguments are looked at (they are bad too here) and
    before any training."""
    def no_work(*args, **kwargs):
        raise AssertionError("work started before the device was checked")
    for f in ("_train", "_train_deep", "_check_net", "_check_pair"):
        monkeypatch.setattr(TS, f, no_work)
    kw = {"record_at": ()} if trainer == "train_with_snapshots" else {}
    with pytest.raises(error, match=match):
        getattr(TS, trainer)(None, None, None, -1, -1.0, device=device, **kw)


def test_device_none_reads_repro_device_and_a_missing_device_or_mps_is_refused(monkeypatch):
    T, s, X = two_layer_setup()
    monkeypatch.setenv("REPRO_DEVICE", "tpu")
    with pytest.raises(ValueError, match="^REPRO_DEVICE must be one of"):
        TS.train_two_layer(T, s, X, 1, 0.1)
    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="^device is 'cuda', but this machine has no cuda device"):
            TS.train_deep(*deep_setup(), 1, 0.1, device="cuda")
    monkeypatch.setattr(TS, "as_device", lambda device: torch.device("mps"))
    for call in (lambda: TS.train_two_layer(T, s, X, 1, 0.1), lambda: TS.train_deep(*deep_setup(), 1, 0.1)):
        with pytest.raises(ValueError, match="^device is 'mps', which has no float64"):
            call()


# ---------------------------------------------------------------------------------------------- meta device

class MetaProbe:
    """:class:`TS._TorchOps` on the meta device, with the two points where a value must be read replaced
    by records: the finite check (its argument's device) and :meth:`home` (the array's device and shape;
    it hands back zeros of that shape)."""

    def __init__(self, monkeypatch):
        self.ops = TS._TorchOps("meta")
        self.checked, self.homed = [], []
        self.ops.home = lambda a: self.homed.append((a.device.type, tuple(a.shape))) or np.zeros(a.shape)
        monkeypatch.setattr(V, "finite_loss", lambda value, *a, **k: self.checked.append(value.device.type))


@pytest.mark.parametrize("S, batched_teacher, batch_size", [(3, False, 4), (None, False, None), (2, True, 4),
                                                             (2, True, None)])
def test_the_two_layer_loop_runs_on_the_meta_device_end_to_end(S, batched_teacher, batch_size, monkeypatch):
    """Every tensor the loop makes is made on the device: a CPU tensor mixed in fails loudly on meta."""
    probe = MetaProbe(monkeypatch)
    T, s, X = two_layer_setup(S, batched_teacher)
    trained, snaps = TS._train(T, s, X, 300, 0.05, batch_size, 0, (0, 300), probe.ops)
    assert probe.checked == ["meta", "meta"]                   # steps 256 and 300
    lead = (1,) if S is None else ()                           # an unbatched student is trained as a batch of 1
    # each layer comes home as one augmented (in + 1, out) array, [W^T; b], at steps 0 and 300 and at the end
    assert sorted(probe.homed) == sorted(3 * [("meta", lead + W.shape[:-2] + (W.shape[-1] + 1, W.shape[-2]))
                                              for W, _ in s])
    assert sorted(snaps) == [0, 300]
    assert [W.shape for pair in trained for W in pair] == [W.shape for pair in s for W in pair]


@pytest.mark.parametrize("S, batch_size", [(2, 8), (None, 8), (2, None)])
def test_the_deep_loop_runs_on_the_meta_device_end_to_end(S, batch_size, monkeypatch):
    probe = MetaProbe(monkeypatch)
    T, s, X = deep_setup(S)
    trained, snaps = TS._train_deep(T, s, X, 257, 0.02, batch_size, 0, (0,), probe.ops)
    assert probe.checked == ["meta", "meta"]                   # steps 256 and 257
    assert sorted(snaps) == [0]                                # the deep snapshot drops the batch of 1 on the device
    assert sorted(probe.homed) == sorted(2 * [("meta", W.shape) for pair in s for W in pair])
    assert [W.shape for pair in trained for W in pair] == [W.shape for pair in s for W in pair]


def test_a_meta_run_of_the_public_trainer_stops_at_the_first_read_value(monkeypatch):
    """With as_device giving meta, train_two_layer moves everything there and runs 256 steps before the
    finite check must read a real value: the first error is that read, not a device mix-up."""
    monkeypatch.setattr(TS, "as_device", lambda device: torch.device("meta"))
    with pytest.raises((RuntimeError, NotImplementedError), match="meta"):
        TS.train_two_layer(*two_layer_setup(), 300, 0.05, batch_size=4)
    with pytest.raises((RuntimeError, NotImplementedError), match="meta"):
        TS.train_deep(*deep_setup(), 300, 0.02, batch_size=4)


# ---------------------------------------------------------------------------------------------- index draws

@pytest.mark.parametrize("per_step", [True, False])
def test_index_batches_keep_the_original_draws_across_chunks(per_step):
    """Per step: one rng.integers(N, (S, B)) call per step, as the deep trainer always drew; otherwise one
    call of (k, S, B) per chunk of k steps (the two-layer trainer's 1024): same streams, any chunk size."""
    got = [np.asarray(i) for i in TS._index_batches(np.random.default_rng(3), 50, 2, 3, 7, TS._NumpyOps, 3,
                                                     per_step)]
    rng = np.random.default_rng(3)
    if per_step:
        want = [rng.integers(50, size=(2, 3)) for _ in range(7)]
    else:
        want = [*rng.integers(50, size=(3, 2, 3)), *rng.integers(50, size=(3, 2, 3)), *rng.integers(50, size=(1, 2, 3))]
    assert len(got) == 7 and all(np.array_equal(g, w) for g, w in zip(got, want))
    moved = list(TS._index_batches(np.random.default_rng(3), 50, 2, 3, 7, TS._TorchOps("cpu"), 3, per_step))
    assert all(isinstance(m, torch.Tensor) and np.array_equal(m.numpy(), w) for m, w in zip(moved, want))
    # on the device already (a CUDA tensor accepts CPU indices, so only this catches a transfer per step)
    on_meta = list(TS._index_batches(np.random.default_rng(3), 50, 2, 3, 7, TS._TorchOps("meta"), 3, per_step))
    assert [(m.device.type, m.dtype, tuple(m.shape)) for m in on_meta] == 7 * [("meta", torch.int64, (2, 3))]
