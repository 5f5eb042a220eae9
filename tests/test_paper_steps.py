"""Issue 36's CPU-side guard of the paper-scale training steps that run as one device program on CUDA
(lib.device_step; chapters 03, 05 and 09, and lib.train.train_minibatch's for chapters 02, 06's pruning CNNs and
07): CI has no GPU, so each step is traced whole by
``torch.compile(fullgraph=True)`` on tiny stand-in shapes (a host synchronisation, ``.item()``, Python control
flow on a tensor's value or a CPU generator inside the step is a graph break or a host read in the traced graph,
either of which fails the test), its count of operator calls must not grow with the number of models batched, and each device program is compared with
the host loop it replaces (an independent computation) where the two can agree."""

import os
from contextlib import nullcontext
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch._dynamo

import lib.annulus_training as AT
import lib.device_step as DS
import lib.mae as mae
import lib.maxmargin as mm
import lib.multiexit as me
import lib.pruning as P
import lib.teacher_student as TS
import lib.train as T

torch.set_num_threads(1)


#: Under mutation testing (scripts/mutation.py) every lib function is called through mutmut's trampoline, which
#: picks the mutant from ``os.environ`` and records call statistics: Python that dynamo cannot trace whole, so
#: the whole-step traces (the tests that take the fixture ``traceable``) would fail on the unmutated code (seen:
#: chapter 03's step). There they are skipped; the device programs' equality with the host loops and the
#: operator counts, which judge their mutants, still run.
UNDER_MUTMUT = "MUTANT_UNDER_TEST" in os.environ


@pytest.fixture
def traceable():
    """Dynamo settings the device programs need: autograd.grad and LSTMs traced, a fresh cache."""
    if UNDER_MUTMUT:
        pytest.skip("mutmut's trampolines cannot be traced whole (UNDER_MUTMUT, above)")
    saved = torch._dynamo.config.trace_autograd_ops, torch._dynamo.config.allow_rnn
    torch._dynamo.config.trace_autograd_ops = torch._dynamo.config.allow_rnn = True
    torch._dynamo.reset()
    yield
    torch._dynamo.config.trace_autograd_ops, torch._dynamo.config.allow_rnn = saved
    torch._dynamo.reset()


HOST_READS = ("item", "tolist", "cpu", "numpy")  # methods; and aten's _local_scalar_dense


def _traced(step):
    """``step`` traced whole (a graph break raises) and run once (eager backend: a trace, no code generation);
    the traced graph must read nothing back to the host (torch >= 2.13 traces ``.item()`` without a break)."""
    calls = []

    def backend(gm, example_inputs):
        calls.extend(str(node.target) for node in gm.graph.nodes if node.op in ("call_method", "call_function"))
        return gm.forward

    out = torch.compile(step, fullgraph=True, backend=backend)()
    reads = [c for c in calls if c in HOST_READS or "_local_scalar_dense" in c]
    assert calls and not reads, f"the step reads values back to the host: {reads}"
    return out


# ------------------------------------------------------------------------------- the steps, on tiny shapes

def _tokens(N=12, T=6, vocab=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    tok = torch.full((N, T), mae.PAD, dtype=torch.long)
    for i, n in enumerate(torch.randint(1, T, (N,), generator=g).tolist()):
        tok[i, :n] = torch.randint(len(mae.SPECIALS), vocab, (n,), generator=g)
        tok[i, n] = mae.EOS
    return tok


def sequence_step(batch=4):
    """Chapter 03's IMDB SequenceMAE step (Algorithm 4.1), vocabulary 11, 6 tokens, hidden 5, k = 3."""
    model = mae.SequenceMAE(_tokens(), 11, latent_dim=2, emb=4, hidden=5, k=3, seed=0)
    return mae.sequence_step(model, 2.0, 1.0, batch, 1e-3, clip=1.0)


def deep_step(S=2, batch_size=8):
    """Chapter 09's deep students (Fig. 6): S students 5-8-12-3 of a 5-4-6-3 teacher."""
    X = torch.as_tensor(TS.gaussian_inputs(40, 5, 1.0, seed=0))
    teacher = TS.make_teacher_deep(5, [4, 6], 3, X.numpy(), seed=0)
    Y = TS._deep_forward([(torch.as_tensor(W), torch.as_tensor(b)) for W, b in teacher], X, TS._TorchOps)[1][-1]
    net = [(torch.as_tensor(W).clone(), torch.as_tensor(b).clone())
           for W, b in TS.make_student_deep(5, [8, 12], 3, S=S, seed=1)]
    return TS.deep_step(net, X, Y, batch_size, torch.tensor(0.01, dtype=torch.float64))


def multiexit_step(S=2, unlabelled=True, bs=4):
    """Chapter 05's six-exit step (Algorithm 6.1, DS when ``unlabelled``), S models on 1x8x8 images."""
    cfg = replace(me.CONFIGS.quick, widths=(4, 4, 4, 4, 4, 4), strides=(1, 2, 1, 2, 1, 2))
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(S, 10, 1, 8, 8, generator=g), torch.randint(0, 10, (S, 10), generator=g)
    model = me.MultiExitCNN(1, cfg.widths, cfg.strides, 10, seeds=list(range(S)))
    model.device_program = True
    model.train()
    annealer = me.TemperatureAnnealer(cfg.mu, cfg.tau_mult, 1.0, S)
    log = torch.zeros(3, 5, S), torch.zeros(1, dtype=torch.long)
    X_unl = torch.randn(S, 7, 1, 8, 8, generator=g) if unlabelled else None
    return me.multiexit_step(model, X, y, [False] + [True] * (S - 1), cfg, "later", annealer,
                             [torch.arange(bs).repeat(S, 1)], torch.tensor(0.1), log, X_unl)


def _minibatch_step(model, X, y, loss_fn, opt, batch_size, last=False, epochs=2):
    """lib.train.minibatch_step on a model flagged as its device program flags it, with the orders of ``epochs``
    epochs drawn (seed 0) and its counter at 0 (``last``: at the epoch's last, shorter batch)."""
    n = X.shape[0]
    g = torch.Generator().manual_seed(0)
    orders = torch.stack([torch.randperm(n, generator=g) for _ in range(epochs)])
    counter = torch.full((), -(-n // batch_size) - 1 if last else 0, dtype=torch.long)
    with torch.no_grad():
        shape = loss_fn(model(X[:1]), y[:1]).shape
    for m in model.modules():
        if hasattr(m, "device_program"):
            m.device_program = True
    return T.minibatch_step(model, X, y, loss_fn, opt, orders, counter, torch.zeros(epochs, *shape), batch_size, last)


def adam_cnn_step(batch=4, last=False):
    """Chapter 02's Table 3.1 CNN (lib.maxmargin.train_adam's device program) on 8x8 images, 10 of them."""
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(10, 1, 8, 8, generator=g), torch.randint(0, 2, (10,), generator=g).float() * 2 - 1
    model = mm.Table31CNN(image_size=8, seed=0)
    return _minibatch_step(model, X, y, mm._logistic_mean, DS.DeviceAdam(list(model.parameters()), 1e-3), batch, last)


def pruning_cnn_step(batch=4, last=False):
    """Chapter 06's pruning CNN (lib.pruning.train_cnn: SGD, momentum, weight decay) on 1x8x8 images, 4 channels,
    one channel and a weight masked off."""
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(10, 1, 8, 8, generator=g), torch.randint(0, 10, (10,), generator=g)
    model = P.PrunableCNN(1, 8, 4, seed=0)
    model.channel_mask1[2] = 0.0
    model.weight_masks[0][1, 0, 1, 1] = 0.0
    opt = DS.DeviceSGD(list(model.parameters()), torch.tensor(0.01), 0.9, 1e-4)
    return _minibatch_step(model, X, y, torch.nn.functional.cross_entropy, opt, batch, last)


def ensemble_step(S=2, batch=4, last=False):
    """Chapter 07's ensemble (lib.annulus_training.train_ball_vs_shell: Adam, per-net BCE or MSE) of S nets
    2-3-1 with their own leaks, 10 points each."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(10, S, 2, generator=g)
    y = torch.where(X.norm(dim=2) < 1, 1.0, -1.0)
    model = AT.LeakEnsemble([2, 3, 1], seeds=list(range(S)), slopes=[0.1 * (m % 3) for m in range(S)])
    loss_fn = AT._per_net_loss(torch.tensor([float(m % 2) for m in range(S)]))
    return _minibatch_step(model, X, y, loss_fn, DS.DeviceAdam(list(model.parameters()), 0.01), batch, last)


STEPS = {"03 SequenceMAE": sequence_step, "05 six-exit CNN (DS)": multiexit_step,
         "05 six-exit CNN (EW/D)": lambda: multiexit_step(unlabelled=False), "09 deep students": deep_step,
         "09 deep students, full batch": lambda: deep_step(batch_size=None),
         "02 Table 3.1 CNN": adam_cnn_step, "02 Table 3.1 CNN, last batch": lambda: adam_cnn_step(last=True),
         "06 pruning CNN": pruning_cnn_step, "06 pruning CNN, last batch": lambda: pruning_cnn_step(last=True),
         "07 ensemble": ensemble_step, "07 ensemble, last batch": lambda: ensemble_step(last=True)}


@pytest.mark.parametrize("name", STEPS)
def test_each_paper_step_traces_as_one_graph(traceable, name):
    """torch.compile(fullgraph=True) traces the whole step (forward, gradients, update, annealing): no host sync."""
    _traced(STEPS[name]())


@pytest.mark.parametrize("name", ["05 six-exit CNN (DS)", "09 deep students", "06 pruning CNN", "07 ensemble"])
def test_paper_steps_go_through_aot_autograd(traceable, name):
    """The step also passes AOT autograd (functionalised in-place updates, as a compiler backend receives it;
    chapter 03's step passes too, but takes 17 s to trace here)."""
    torch.compile(STEPS[name](), fullgraph=True, backend="aot_eager")()


def test_the_guard_fails_on_a_host_sync(traceable):
    """The guard can fail: Python control flow on a tensor's value breaks the graph, and a value read back and
    used (``float(t)``, ``.item()``: torch >= 2.13 traces them) is found in the graph. (A read whose result is
    never used is dropped by the tracer: this guard does not see it.)"""
    step = deep_step()

    def branches():
        step()
        if float(torch.zeros(())) > 1:
            raise AssertionError

    def reads():
        step()
        return torch.ones(()) * torch.zeros(()).item()

    with pytest.raises(Exception, match="(?i)data-dependent|graph break|unsupported"):
        _traced(branches)
    with pytest.raises(AssertionError, match=r"reads values back to the host: \['item'\]"):
        _traced(reads)


@pytest.mark.parametrize("make, small, large", [
    (deep_step, dict(S=1), dict(S=6)),
    (multiexit_step, dict(S=2), dict(S=6)),  # (S = 1 reshapes by views where S > 1 copies: 43 calls fewer)
    (sequence_step, dict(batch=2), dict(batch=8)),
    (ensemble_step, dict(S=1), dict(S=12)),
    (pruning_cnn_step, dict(batch=2), dict(batch=8)),
], ids=["09 deep students (models)", "05 six-exit CNN (models)", "03 SequenceMAE (batch)", "07 ensemble (models)",
        "06 pruning CNN (batch)"])
def test_operator_calls_per_step_do_not_grow_with_the_models_batched(make, small, large):
    """The host's work per step (operator calls, torch.profiler) is the same for 1 model as for many (chapter 07's
    ensemble: 1 net or 12) and, for chapters 03's and 06's one model, for a small batch as for a large one:
    batching costs the GPU, not the host."""
    counts = []
    for kw in (small, large):
        step = make(**kw)
        step()  # first call: lazy initialisation outside the count
        counts.append(DS.operator_calls(step))
    assert counts[0] == counts[1] > 50


# ------------------------------------------------------------------------------- against the host loops

def test_device_adam_and_sgd_match_torch_optim():
    """DeviceAdam (also with weight decay) and DeviceSGD (Nesterov, weight decay, a rate changed mid-way) give
    torch.optim's steps."""
    g = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 4, generator=g), torch.randn(5, generator=g)]
    grads = [[torch.randn(p.shape, generator=g) for p in start] for _ in range(6)]
    for make_ref, make_dev in (
            (lambda ps: torch.optim.Adam(ps, lr=0.01), lambda ps: DS.DeviceAdam(ps, 0.01)),
            (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
             lambda ps: DS.DeviceSGD(ps, torch.tensor(0.1), 0.9, 1e-2, nesterov=True)),
            (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5),
             lambda ps: DS.DeviceSGD(ps, torch.tensor(0.1), 0.5)),
            (lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1),
             lambda ps: DS.DeviceAdam(ps, 0.01, weight_decay=0.1))):
        ref = [p.clone().requires_grad_() for p in start]
        dev = [p.clone() for p in start]
        opt_ref, opt_dev = make_ref(ref), make_dev(dev)
        for i, gs in enumerate(grads):
            if i == 3 and isinstance(opt_dev, DS.DeviceSGD):
                opt_ref.param_groups[0]["lr"] = 0.05
                opt_dev.lr.fill_(0.05)
            for p, gr in zip(ref, gs):
                p.grad = gr.clone()
            opt_ref.step()
            opt_dev.update(gs)
        for a, b in zip(ref, dev):
            torch.testing.assert_close(a.detach(), b, rtol=1e-5, atol=1e-6)


def test_padded_encoder_states_equal_packed_ones():
    """SequenceMAE's encoders without packing (_last_states) give pack_padded_sequence's final states."""
    model = mae.SequenceMAE(_tokens(), 11, latent_dim=2, emb=4, hidden=5, k=3, seed=0)
    x = torch.cat([_tokens(seed=3), torch.full((1, 6), mae.PAD)])  # a row of pads only: length 1, as packed
    for emb, rnn, out in ((model.enc_emb, model.enc_rnn, model.enc_out), (model.r_emb, model.r_rnn, model.r_out)):
        packed = model._gauss(x, emb, rnn, out)
        model.device_program = True
        padded = model._gauss(x, emb, rnn, out)
        model.device_program = False
        for a, b in zip(packed, padded):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_categorical_draws_follow_the_softmax():
    """lib.device_step.categorical draws index i with probability softmax(logits)_i (-inf: never)."""
    torch.manual_seed(0)
    logits = torch.tensor([0.0, 1.0, -1.0, -float("inf"), 2.0])
    draws = DS.categorical(logits.expand(200_000, -1))
    freq = torch.bincount(draws, minlength=5).double() / len(draws)
    p = torch.softmax(logits.double(), 0)
    assert freq[3] == 0
    assert torch.all((freq - p).abs() < 4 * torch.sqrt(p * (1 - p) / len(draws)) + 1e-12)


def test_multiexit_device_program_equals_the_host_loop_on_full_batches(monkeypatch):
    """With one full batch per epoch (the batch order cannot matter), chapter 05's device program (REPRO_STEP_MODE=
    eager) trains to the host loop's weights, BN statistics, temperatures and annealing log, milestones included."""
    cfg = replace(me.CONFIGS.quick, epochs=6, batch_size=16, mu=0.1)
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(3, 16, 1, 8, 8, generator=g), torch.randint(0, 10, (3, 16), generator=g)
    runs = []
    for mode in ("host", "eager"):
        monkeypatch.setenv("REPRO_STEP_MODE", mode)
        model = me.MultiExitCNN(1, cfg.widths, cfg.strides, 10, seeds=[0, 1, 2])
        annealer = me.train_multiexit(model, X, y, [False, True, True], cfg, const_tau=[None, None, 2.0],
                                      progress=False)
        assert not model.training and not model.device_program
        runs.append((model.state_dict(), annealer.history(), annealer.tau))
    (sa, ha, ta), (sb, hb, tb) = runs
    for k in sa:
        torch.testing.assert_close(sa[k], sb[k], rtol=1e-5, atol=1e-6)
    for k in ha:
        np.testing.assert_allclose(ha[k], hb[k], rtol=1e-5, atol=1e-6)
    assert ha["tau"][-1][0] > 1.0 and ta.device.type == "cpu"  # the annealing did act
    torch.testing.assert_close(ta, tb)


def test_deep_device_program_equals_the_host_loop_in_full_batch(monkeypatch):
    """Full-batch GD (no random numbers) of chapter 09's deep students: the device program, a schedule and
    snapshots included, gives the numpy loop's students to float64 rounding."""
    X = TS.gaussian_inputs(50, 5, 1.0, seed=0)
    teacher = TS.make_teacher_deep(5, [4, 6], 3, X, seed=0)
    student = TS.make_student_deep(5, [8, 12], 3, S=3, seed=1)
    runs = []
    for mode in ("host", "eager"):
        monkeypatch.setenv("REPRO_STEP_MODE", mode)
        runs.append(TS.train_deep(teacher, student, X, 40, {0: 0.05, 20: 0.02}, batch_size=None,
                                  record_at=[0, 10, 40], device="cpu"))
    (a, sa), (b, sb) = runs
    assert all(np.array_equal(W, W0) for (W, _), (W0, _) in zip(student, TS.make_student_deep(5, [8, 12], 3, S=3, seed=1)))
    assert sorted(sa) == sorted(sb) == [0, 10, 40]
    for net_a, net_b in [(a, b), *((sa[t], sb[t]) for t in sa)]:
        for (Wa, ba), (Wb, bb) in zip(net_a, net_b):
            assert isinstance(Wb, np.ndarray)
            np.testing.assert_allclose(Wa, Wb, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(ba, bb, rtol=1e-12, atol=1e-12)
    assert not np.allclose(sa[10][0][0], sa[0][0][0])  # it did train


def test_sequence_device_program_trains_and_logs(monkeypatch):
    """Chapter 03's device program through train_mae (REPRO_STEP_MODE=eager): the trace at the logging steps,
    the model back in its host mode (packed encoders) and changed; same seed, same numbers."""
    monkeypatch.setenv("REPRO_STEP_MODE", "eager")
    traces = []
    for _ in range(2):
        model = mae.SequenceMAE(_tokens(), 11, latent_dim=2, emb=4, hidden=5, k=3, seed=0)
        start = model.dec_out.weight.detach().clone()
        traces.append(mae.train_mae(model, [1.0], steps=7, batch=4, log_every=3, device="cpu").as_arrays())
        assert not model.device_program and not torch.equal(start, model.dec_out.weight)
    steps, elbo, mi = traces[0]
    assert steps.tolist() == [3, 6, 7] and elbo.shape == mi.shape == (3, 1) and np.isfinite(elbo).all()
    assert all((a == b).all() for a, b in zip(traces[0], traces[1]))


def test_sequence_program_does_no_host_work_between_steps(monkeypatch):
    """Around chapter 03's step, train_mae's device-program path adds only the step's own log writes (a few
    operators on the device), however often it logs: no per-step copies, clones or draws on the host, which
    on CUDA would run outside the replayed graphs (issue 36)."""
    monkeypatch.setenv("REPRO_STEP_MODE", "eager")
    step = sequence_step()
    step()
    per_step = DS.operator_calls(step)
    calls = {n: DS.operator_calls(lambda: mae.train_mae(
        mae.SequenceMAE(_tokens(), 11, latent_dim=2, emb=4, hidden=5, k=3, seed=0), [2.0], C=1.0, steps=n, batch=4,
        log_every=1, clip=1.0, device="cpu")) for n in (8, 24)}
    assert 0 < (calls[24] - calls[8]) / 16 - per_step <= 8
    runs, run = [], DS.StepRunner.run  # and the host acts once per chunk of GRAPH_CHUNK steps, not per logged step
    monkeypatch.setattr(DS.StepRunner, "run", lambda self, n: runs.append(n) or run(self, n))
    model = mae.SequenceMAE(_tokens(), 11, latent_dim=2, emb=4, hidden=5, k=3, seed=0)
    mae.train_mae(model, [2.0], steps=3 * mae.GRAPH_CHUNK + 1, batch=4, log_every=1, device="cpu")
    assert runs == [mae.GRAPH_CHUNK] * 3 + [1]


def _cnn_sgd(mp):
    """Chapter 06's CNN through lib.pruning.train_cnn (SGD, momentum, weight decay), 23 images in batches of 5 (the
    last of 3), one channel masked: the mean epoch losses and the weights."""
    g = torch.Generator().manual_seed(1)
    X, y = torch.randn(23, 1, 8, 8, generator=g), torch.randint(0, 10, (23,), generator=g)
    model = P.PrunableCNN(1, 8, 4, seed=0)
    model.channel_mask0[1] = 0.0
    losses = P.train_cnn(model, X, y, 3, batch_size=5, lr=0.05, momentum=0.9, weight_decay=1e-2, seed=3)
    return losses, list(model.parameters())


def _cnn_adam(mp):
    """Chapter 02's Table 3.1 CNN through lib.maxmargin.train_adam, 27 8x8 images in batches of 10 (the last of 7)."""
    g = torch.Generator().manual_seed(2)
    X, y = torch.randn(27, 1, 8, 8, generator=g), torch.randint(0, 2, (27,), generator=g).float() * 2 - 1
    model = mm.Table31CNN(image_size=8, seed=0)
    losses = mm.train_adam(model, X, y, 2, 10, 1e-3, seed=1, progress=False)
    return losses, list(model.parameters())


def _ensemble(mp):
    """Chapter 07's ensemble through lib.annulus_training.train_ball_vs_shell: 6 nets (BCE and MSE, three leaks),
    40 points each in batches of 10 (every batch full: the path without epoch boundaries)."""
    X, y = AT.ball_vs_shell(2, 40, 0.5, 0.7, 1.0, np.random.default_rng(0), n_sets=6)
    model = AT.train_ball_vs_shell(torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32),
                                   [0.0, 0.1, 0.2] * 2, np.array([True, False] * 3), epochs=4, batch_size=10,
                                   lr=0.01, seed=2, net_seeds=range(6))
    return [], list(model.parameters())


def _mlp_blocks(monkeypatch, on_epoch_end=None):
    """lib.train.train_minibatch on a BatchedMLP (logistic loss per model, SGD with momentum), 12 rows in batches
    of 4, 5 epochs, the device program's orders drawn 2 epochs at a time (ORDER_ENTRIES = 24)."""
    from lib.nets import BatchedMLP

    monkeypatch.setattr(T, "ORDER_ENTRIES", 24)
    g = torch.Generator().manual_seed(4)
    X = torch.randn(12, 3, generator=g)
    model = BatchedMLP([3, 5, 1], seeds=[0, 1, 2])
    hist = T.train_minibatch(model, X, torch.sign(X[:, 0]), T.logistic_per_model, 5, 4, 0.1, seed=5, momentum=0.9,
                             progress=False, on_epoch_end=on_epoch_end, device="cpu")
    return hist.losses(), list(model.parameters())


def _runs(monkeypatch):
    """The StepRunner.run calls (steps each) of the device programs from now on."""
    runs, run = [], DS.StepRunner.run
    monkeypatch.setattr(DS.StepRunner, "run", lambda self, n: runs.append(n) or run(self, n))
    return runs


@pytest.mark.parametrize("train, tol, runs", [
    (_cnn_sgd, 1e-6, [4, 1] * 3),
    (_cnn_adam, 2e-5, [2, 1] * 2),
    (_ensemble, 2e-5, [16]),
    (_mlp_blocks, 1e-6, [6, 6, 3]),
], ids=["06 pruning CNN, SGD", "02 Table 3.1 CNN, Adam", "07 ensemble, Adam", "BatchedMLP, orders in blocks"])
def test_minibatch_device_program_equals_the_host_loop(monkeypatch, train, tol, runs):
    """On the CPU the device program (REPRO_STEP_MODE=eager) draws its orders from the CPU's default generator seeded
    ``seed``, i.e. the host loop's permutations: it must train to the host loop's weights and epoch losses (up to
    the rounding of DeviceSGD/DeviceAdam's foreach updates against torch.optim's), last shorter batches, orders redrawn
    per block of epochs included. The host acts once per epoch where the last batch is shorter (full batches, then
    the last one) and once per block of epochs where every batch is full."""
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        for mode in ("host", "eager"):
            mp.setenv("REPRO_STEP_MODE", mode)
            seen = _runs(mp)
            losses, params = train(mp)
            out[mode] = np.asarray(losses, dtype=float), [p.detach().clone() for p in params]
            assert seen == ([] if mode == "host" else runs)
    (la, pa), (lb, pb) = out["host"], out["eager"]
    np.testing.assert_allclose(la, lb, rtol=tol, atol=tol)
    for a, b in zip(pa, pb):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_minibatch_device_program_calls_back_between_epochs(monkeypatch):
    """on_epoch_end runs on the host after every epoch, sees the model with its per-batch checks back on
    (device_program False), and what it changes in place (a weight halved) the following steps train on: as in the
    host loop."""
    out = {}
    for mode in ("host", "eager"):
        monkeypatch.setenv("REPRO_STEP_MODE", mode)
        calls = []

        def halve(epoch, model):
            calls.append((epoch, getattr(model, "device_program", None)))
            with torch.no_grad():
                model.weights[0][:, 0].mul_(0.5)

        out[mode] = _mlp_blocks(monkeypatch, halve), calls
    ((la, pa), ca), ((lb, pb), cb) = out["host"], out["eager"]
    assert [e for e, _ in ca] == [e for e, _ in cb] == list(range(5))
    np.testing.assert_allclose(la, lb, rtol=1e-6, atol=1e-6)
    for a, b in zip(pa, pb):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_device_program_flags_are_set_for_the_steps_only(monkeypatch):
    """The model's device_program flag is on while the steps run (its forward skips the finiteness check that
    reads back) and off before, after and around a callback; lib.pruning's CNN trains through it."""
    monkeypatch.setenv("REPRO_STEP_MODE", "eager")
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(8, 1, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g)
    model = P.PrunableCNN(1, 8, 4, seed=0)
    seen, forward = [], P.PrunableCNN.forward
    monkeypatch.setattr(P.PrunableCNN, "forward", lambda self, x: seen.append(self.device_program) or forward(self, x))
    calls = []
    T.train_minibatch(model, X, y, torch.nn.functional.cross_entropy, 2, 4, 0.01, progress=False,
                      on_epoch_end=lambda e, m: calls.append(m.device_program), device="cpu")
    assert seen == [False] + [True] * 4 and calls == [False, False] and not model.device_program  # (probe, steps)


def test_minibatch_device_program_names_the_first_diverged_epoch(monkeypatch):
    """A loss that turns NaN in epoch 2 (from the 4th step, 3 batches an epoch): the host loop stops there; the device
    program trains on to the end and then names the same epoch. (Its one loss call without gradients, the probe of
    the loss's shape, is not counted.)"""
    from lib.nets import BatchedMLP

    messages = {}
    for mode in ("host", "eager"):
        monkeypatch.setenv("REPRO_STEP_MODE", mode)
        steps = []

        def loss(out, t):
            steps.extend([1] if torch.is_grad_enabled() else [])
            return T._mse_per_model(out, t) * (float("nan") if len(steps) > 3 else 1.0)

        with pytest.raises(Exception) as err:
            T.train_minibatch(BatchedMLP([2, 3, 1], seeds=[0]), torch.randn(9, 2), torch.randn(9, 1), loss, 4, 3, 0.1,
                              progress=False, device="cpu")
        messages[mode] = type(err.value).__name__, str(err.value), len(steps)
    assert messages["host"][:2] == messages["eager"][:2] and "by step 2 (epoch)" in messages["host"][1]
    assert messages["host"][2] == 6 and messages["eager"][2] == 12


def test_graph_chunks_take_the_fewest_replays():
    """_chunk(steps): the graph size c <= GRAPH_CHUNK with the fewest replays steps // c + steps % c (ties: the
    larger c), found by trying every c."""
    for steps in (1, 7, 64, 65, 97, 98, 100, 1500, 16 * 99):
        best = min(range(1, min(T.GRAPH_CHUNK, steps) + 1), key=lambda c: (steps // c + steps % c, -c))
        assert T._chunk(steps) == best
    assert T._chunk(98) == 49 and T._chunk(1500) == 60 and T._chunk(64) == 64 and T._chunk(0) == 1


# ------------------------------------------------------------------------------- which path runs

def test_the_cpu_keeps_its_host_loops_and_modes_are_checked(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    monkeypatch.delenv("REPRO_STEP_MODE", raising=False)
    assert DS.step_mode(cpu) == "host" and DS.step_mode(cuda) == "graph"
    for value, want in (("auto", "host"), ("", "host"), ("EAGER", "eager"), ("host", "host")):
        monkeypatch.setenv("REPRO_STEP_MODE", value)
        assert DS.step_mode(cpu) == want
    monkeypatch.setenv("REPRO_STEP_MODE", "graph")
    assert DS.step_mode(cuda) == "graph"
    with pytest.raises(ValueError, match="needs a CUDA device"):
        DS.step_mode(cpu)
    monkeypatch.setenv("REPRO_STEP_MODE", "fast")
    with pytest.raises(ValueError, match="REPRO_STEP_MODE must be"):
        DS.step_mode(cpu)


def test_step_runner_counts_every_step_and_returns_the_last_output():
    calls = []

    def step():
        calls.append(len(calls))
        return torch.tensor(float(len(calls)))

    runner = DS.StepRunner(step, "eager")
    assert runner.run(0) is None and float(runner.run(3)) == 3.0 and runner.done == 3 and len(calls) == 3
    with pytest.raises(ValueError, match="mode must be"):
        DS.StepRunner(step, "host")


class _FakeCuda:
    """Stand-ins for torch.cuda's streams and graphs on the CPU: a 'capture' records the step calls without
    running them and a replay runs them, as a CUDA graph does (or raises, to test the fall-back)."""

    def __init__(self, fail=False):
        self.capturing, self.fail, self.captures = None, fail, []

    def install(self, monkeypatch):
        from contextlib import contextmanager, nullcontext

        fake = self

        class Stream:
            def wait_stream(self, other):
                pass

        class Graph:
            def __init__(self):
                self.calls = []

            def replay(self):
                for call in self.calls:
                    call(real=True)

        @contextmanager
        def graph(g):
            fake.capturing = g
            try:
                yield
                if fake.fail:
                    raise RuntimeError("operation not permitted when stream is capturing")
            finally:
                fake.capturing = None
            fake.captures.append(len(g.calls))

        class Event:  # records how many replays had run when it was recorded; synchronize notes that
            def __init__(self, blocking=False):
                assert blocking  # the host must sleep, not spin, while it waits
                self.at = None

            def record(self):
                self.at = len(fake.events)
                fake.events.append(self)

            def synchronize(self):
                fake.synced.append(self.at)

        fake.events, fake.synced = [], []
        for name, value in (("Stream", Stream), ("current_stream", lambda: Stream()), ("stream", lambda s: nullcontext()),
                            ("CUDAGraph", Graph), ("graph", graph), ("synchronize", lambda: None), ("Event", Event)):
            monkeypatch.setattr(torch.cuda, name, value)


@pytest.mark.parametrize("fail", [False, True], ids=["captured", "capture fails"])
def test_step_runner_graph_mode_bookkeeping(monkeypatch, fail):
    """Graph mode (with stand-ins for CUDA graphs): warm-up steps run eagerly, then chunks of 64 and single steps
    replay their graphs; every step runs exactly once, in order, and ``done`` counts them; a failed capture is
    noted and the runner goes on eagerly without losing a step."""
    fake = _FakeCuda(fail)
    fake.install(monkeypatch)
    ran = []

    def step(real=False):
        if fake.capturing is not None and not real:
            fake.capturing.calls.append(step)
            return "static"
        ran.append(len(ran))
        return len(ran)

    DS.FALLBACKS.clear()
    runner = DS.StepRunner(step, "graph", chunk=64)
    with pytest.warns(RuntimeWarning, match="capture failed") if fail else nullcontext():
        for n in (2, 0, 150, 64, 5):
            runner.run(n)
    assert ran == list(range(221)) and runner.done == 221
    if fail:
        assert runner.mode == "eager" and len(DS.FALLBACKS) == 1 and fake.captures == []
    else:
        assert runner.mode == "graph" and sorted(runner.graphs) == [1, 64] and fake.captures == [64, 1]
        assert runner.out == "static"


def test_step_runner_keeps_the_host_at_most_ahead_replays_ahead(monkeypatch):
    """With ``ahead`` (lib.train's device program: AHEAD), graph mode records an event after every replay and sleeps on
    the oldest as soon as more than ``ahead`` are queued: replay k waits for replay k - ahead, so the host never
    fills the launch queue. Without it (and in eager mode) no event is recorded."""
    fake = _FakeCuda()
    fake.install(monkeypatch)

    def step(real=False):
        if fake.capturing is not None and not real:
            fake.capturing.calls.append(step)
        return None

    runner = DS.StepRunner(step, "graph", chunk=4, warmup=2, ahead=2)
    runner.run(2 + 4 * 5 + 3)  # 2 warm-up steps, 5 replays of 4, 3 of 1
    assert runner.done == 25 and len(fake.events) == 8 and fake.synced == list(range(6))
    for kw in (dict(mode="graph"), dict(mode="eager", ahead=2)):
        fake.events.clear()
        DS.StepRunner(step, chunk=4, **kw).run(20)
        assert fake.events == []
    with pytest.raises(ValueError, match="ahead"):
        DS.StepRunner(step, "graph", ahead=0)
