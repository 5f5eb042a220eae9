"""Issue 36's CPU-side guard of the paper-scale training steps that run as one device program on CUDA
(lib.device_step; chapters 03, 05 and 09): CI has no GPU, so each step is traced whole by
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

import lib.device_step as DS
import lib.mae as mae
import lib.multiexit as me
import lib.teacher_student as TS

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


STEPS = {"03 SequenceMAE": sequence_step, "05 six-exit CNN (DS)": multiexit_step,
         "05 six-exit CNN (EW/D)": lambda: multiexit_step(unlabelled=False), "09 deep students": deep_step,
         "09 deep students, full batch": lambda: deep_step(batch_size=None)}


@pytest.mark.parametrize("name", STEPS)
def test_each_paper_step_traces_as_one_graph(traceable, name):
    """torch.compile(fullgraph=True) traces the whole step (forward, gradients, update, annealing): no host sync."""
    _traced(STEPS[name]())


@pytest.mark.parametrize("name", ["05 six-exit CNN (DS)", "09 deep students"])
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
], ids=["09 deep students (models)", "05 six-exit CNN (models)", "03 SequenceMAE (batch)"])
def test_operator_calls_per_step_do_not_grow_with_the_models_batched(make, small, large):
    """The host's work per step (operator calls, torch.profiler) is the same for 1 model as for many (and for
    chapter 03's one model, for a small batch as for a large one): batching costs the GPU, not the host."""
    counts = []
    for kw in (small, large):
        step = make(**kw)
        step()  # first call: lazy initialisation outside the count
        counts.append(DS.operator_calls(step))
    assert counts[0] == counts[1] > 50


# ------------------------------------------------------------------------------- against the host loops

def test_device_adam_and_sgd_match_torch_optim():
    """DeviceAdam and DeviceSGD (Nesterov, weight decay, a rate changed mid-way) give torch.optim's steps."""
    g = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 4, generator=g), torch.randn(5, generator=g)]
    grads = [[torch.randn(p.shape, generator=g) for p in start] for _ in range(6)]
    for make_ref, make_dev in (
            (lambda ps: torch.optim.Adam(ps, lr=0.01), lambda ps: DS.DeviceAdam(ps, 0.01)),
            (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
             lambda ps: DS.DeviceSGD(ps, torch.tensor(0.1), 0.9, 1e-2, nesterov=True)),
            (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5),
             lambda ps: DS.DeviceSGD(ps, torch.tensor(0.1), 0.5))):
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

        for name, value in (("Stream", Stream), ("current_stream", lambda: Stream()), ("stream", lambda s: nullcontext()),
                            ("CUDAGraph", Graph), ("graph", graph), ("synchronize", lambda: None)):
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
