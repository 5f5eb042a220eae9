"""Issue 22 for lib.mae (chapter 03): train_mae trains on REPRO_DEVICE and brings the model home, and the
tensors the model methods make follow the model's device (a meta device stands in for CUDA here)."""

import pytest
import torch

import lib.mae as mae
import lib.scale
import lib.validate

torch.set_num_threads(1)
CPU, META = torch.device("cpu"), torch.device("meta")


class _Moves:
    """Records every device the model is moved to (``Module.to``)."""

    def to(self, *args, **kwargs):
        self.moves.append(torch.device(args[0]) if args else kwargs["device"])
        return super().to(*args, **kwargs)


class _SpyNormal(_Moves, mae.NormalMAE):
    pass


class _SpyFinite(_Moves, mae.FiniteMAE):
    pass


class _SpySequence(_Moves, mae.SequenceMAE):
    pass


def _tokens():
    return torch.tensor([[4, 5, 6, mae.EOS, mae.PAD], [7, 4, mae.EOS, mae.PAD, mae.PAD],
                         [8, 9, 10, 5, mae.EOS], [6, mae.EOS, mae.PAD, mae.PAD, mae.PAD]])


def _model(kind):
    """A small model of each class (a spy) with its targets."""
    if kind == "normal":
        model, targets = _SpyNormal([0, 1], hidden=4), [None, 0.5]
    elif kind == "finite":
        model, targets = _SpyFinite([0, 1], torch.full((5,), 0.2), hidden=4, k=2), [1.0, None]
    else:
        model, targets = _SpySequence(_tokens(), 11, latent_dim=2, emb=4, hidden=3, k=2, seed=1), [1.0]
    model.moves = []
    return model, targets


KINDS = ("normal", "finite", "sequence")


@pytest.mark.parametrize("kind", KINDS)
def test_train_mae_on_repro_device_gives_the_cpu_numbers_and_comes_home(monkeypatch, kind):
    """REPRO_DEVICE=auto/cpu and device="cpu"/torch.device("cpu") give identical traces and parameters on a
    CPU-only machine; the model goes to the device first and home afterwards; the trace is numpy."""
    runs = []
    for env, arg in (("auto", None), ("cpu", None), ("auto", "cpu"), ("cpu", CPU)):
        monkeypatch.setenv("REPRO_DEVICE", env)
        model, targets = _model(kind)
        start = [p.detach().clone() for p in model.parameters()]
        clip = None if kind == "sequence" else 1.0  # (per-model clipping needs a leading model dimension)
        trace = mae.train_mae(model, targets, steps=3, batch=4, log_every=1, clip=clip, anneal=0.5, device=arg)
        assert model.moves == [CPU, CPU]
        assert all(p.device == CPU for p in model.parameters())
        params = [p.detach().clone() for p in model.parameters()]
        assert not all(torch.equal(a, b) for a, b in zip(params, start))  # it did train
        runs.append((trace.as_arrays(), params))
    for (steps, elbo, mi), params in runs[1:]:
        assert (steps == runs[0][0][0]).all() and (elbo == runs[0][0][1]).all() and (mi == runs[0][0][2]).all()
        assert all(torch.equal(a, b) for a, b in zip(params, runs[0][1]))


def test_train_mae_comes_home_after_a_failure_and_refuses_a_bad_device_before_moving(monkeypatch):
    model, targets = _model("normal")

    def fail(self, B, gen):
        raise RuntimeError("boom")

    monkeypatch.setattr(mae.NormalMAE, "elbo", fail)
    with pytest.raises(RuntimeError, match="^boom$"):
        mae.train_mae(model, targets, steps=2, batch=4, device="cpu")
    assert model.moves == [CPU, CPU]                  # home again after a failure too
    model.moves = []
    with pytest.raises(ValueError, match="^device must be one of \\('cpu', 'cuda', 'mps'\\)"):
        mae.train_mae(model, targets, steps=2, batch=4, device="gpu")
    with pytest.raises(TypeError, match="^device must be None, a str or a torch.device, got"):
        mae.train_mae(model, targets, steps=2, batch=4, device=0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="^device is 'cuda', but this machine has no cuda device$"):
            mae.train_mae(model, targets, steps=2, batch=4, device="cuda")
    monkeypatch.setenv("REPRO_DEVICE", "tpu")
    with pytest.raises(ValueError, match="^REPRO_DEVICE must be one of"):
        mae.train_mae(model, targets, steps=2, batch=4)
    assert model.moves == []                          # a bad device is refused before anything moves


def test_train_mae_goes_home_to_where_the_model_was(monkeypatch):
    model, targets = _model("normal")
    model.to("meta")
    monkeypatch.setattr(lib.scale, "as_device", lambda device: CPU)
    with pytest.raises(NotImplementedError, match="meta"):  # no values to copy off a meta model
        mae.train_mae(model, targets, steps=1, batch=4)
    assert model.moves[-1] == META and all(p.is_meta for p in model.parameters())


@pytest.fixture
def meta_ok(monkeypatch):
    """Lets a model run on the meta device: the finiteness checks of inputs and the CPU hand-offs
    (multinomial draws, packing lengths) need values, which meta tensors lack; ones stand in for those."""
    check = lib.validate.tensor
    monkeypatch.setattr(lib.validate, "tensor",
                        lambda t, *a, **k: t if isinstance(t, torch.Tensor) and t.is_meta else check(t, *a, **k))
    monkeypatch.setattr(mae, "_on_cpu", lambda t: torch.ones(t.shape, dtype=t.dtype) if t.is_meta else t.cpu())


class _OneDevice(torch.overrides.TorchFunctionMode):
    """Fails every torch call that mixes tensors of two devices (0-dim CPU tensors, which CUDA takes as
    scalars, and the lengths and batch sizes of packed sequences, which PyTorch keeps on the CPU, excepted):
    on CUDA such a call fails (an embedding of CPU ids) or copies behind one's back (CPU indices), which a
    meta run alone lets by."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not torch._pack_padded_sequence:
            packed = getattr(func, "__name__", "") == "lstm" and isinstance(args[1], torch.Tensor)
            leaves = torch.utils._pytree.tree_leaves(((args[0], *args[2:]) if packed else args, kwargs))
            devices = {t.device for t in leaves if isinstance(t, torch.Generator)  # a draw on a CPU generator
                       or isinstance(t, torch.Tensor) and not (t.ndim == 0 and t.is_cpu)}  # needs CPU tensors
            assert len(devices) <= 1, f"{getattr(func, '__name__', func)} mixes {devices}"
        return func(*args, **kwargs)


def _calls(model):
    """Every method of ``model`` that makes tensors of its own, as ``name -> call(gen)``."""
    calls = {"elbo": lambda g: model.elbo(6, g), "expected_log_r": lambda g: model.expected_log_r(6, g),
             "r_loss": lambda g: model.r_loss(6, g)}
    if isinstance(model, mae.NormalMAE):
        calls["sample_joint"] = lambda g: model.sample_joint(6, g)[1]
    if isinstance(model, mae.FiniteMAE):  # (these draw with a generator of their own)
        def gaussian_encoder(g):  # the k = 1 branch of sample_reconstructions
            k, model.k = model.k, 1
            try:
                return mae.sample_reconstructions(model, 1)
            finally:
                model.k = k

        calls.update(sir_sample=lambda g: mae.sir_sample(model, 3), gaussian_encoder=gaussian_encoder,
                     sample_reconstructions=lambda g: mae.sample_reconstructions(model, 1))
    if isinstance(model, mae.SequenceMAE):
        x = model.tokens[:3]
        calls.update(batch=lambda g: model._batch(6, g), encode_sample=lambda g: model.encode_sample(x, g),
                     sample_x=lambda g: model.sample_x(torch.zeros(3, model.latent_dim, device=x.device), g),
                     greedy=lambda g: model.sample_x(torch.zeros(3, model.latent_dim, device=x.device), g, True))
    return calls


@pytest.mark.parametrize("kind", KINDS)
def test_methods_make_their_tensors_on_the_model_device(meta_ok, kind):
    """On a meta model every method's result is a meta tensor (a CPU tensor mixed in fails loudly), and the
    CPU generator advances exactly as on the CPU: a CUDA run draws the CPU's random numbers."""
    cpu_model, _ = _model(kind)
    model, _ = _model(kind)
    model.to("meta")
    for name, call in _calls(model).items():
        gen, gen_cpu = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        with _OneDevice():
            assert call(gen).device == META, name
        if kind != "sequence" or name in ("batch", "greedy"):  # multinomial draws on ones, not on the model's p
            _calls(cpu_model)[name](gen_cpu)
            assert torch.equal(gen.get_state(), gen_cpu.get_state()), name


@pytest.mark.parametrize("kind", KINDS)
def test_the_training_loop_runs_on_the_model_device(meta_ok, kind):
    """A whole step of the loop (targets, penalty weights, clipping, both Adam steps) on a meta model; it
    stops only where the trace copies the logged values to the CPU, which a meta tensor cannot do."""
    model, targets = _model(kind)
    model.to("meta")
    Cs = [1.0] * len(targets)
    with pytest.raises(NotImplementedError, match="^Cannot copy out of meta tensor"), _OneDevice():
        mae._train_loop(model, targets, Cs, 1, 1e-2, None, 4, 0, 1, "t", None if kind == "sequence" else 1.0, 0.5)


def test_evaluation_helpers_accept_a_model_off_the_cpu(meta_ok):
    """The reconstruction rates move the sentences to the model and the decoded ones back to the CPU."""
    model, _ = _model("sequence")
    model.to("meta")
    seen = {}
    sample_x = model.sample_x

    def spy(z, gen, greedy=False):
        seen["z"] = z.device
        y = sample_x(z, gen, greedy)
        seen["y"] = y.device
        return y

    model.sample_x = spy
    with _OneDevice():
        exact, words, y = mae.sequence_reconstruction_rates(model, _tokens(), greedy=True)
    assert seen == {"z": META, "y": META} and y.device == CPU and exact == words == 0  # y: ones (meta_ok)
