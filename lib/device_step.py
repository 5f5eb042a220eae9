"""Training steps as one device program (issue 36): the paper-scale trainers' CUDA path.

On a GPU a small model's step costs the host's work (Python, kernel launches, host-device copies and
synchronisations), not the GPU's arithmetic. A trainer's *device program* is a step function without
arguments that closes over tensors resident on the device and

* draws its random numbers on the device, from the device's default generator (seeded once by
  :func:`seeded`), not from a CPU ``torch.Generator`` whose draws would be copied over,
* never reads a value back to the host (no ``.item()``, ``.cpu()``, Python control flow on tensor
  values, no tensor made from a Python list inside the step),
* computes its gradients with ``torch.autograd.grad`` and updates the parameters in place with
  :class:`DeviceAdam` or a hand-written SGD update (``torch.optim``'s ``step`` is host-side code),

so that :class:`StepRunner` can replay it as a captured CUDA graph (``mode="graph"``, a chunk of steps
per replay) or compile it (``mode="compile"``: ``torch.compile(mode="reduce-overhead")``), and the CPU
guard ``tests/test_paper_steps.py`` can trace it whole with ``torch.compile(fullgraph=True)``.

Which path a trainer takes is :func:`step_mode`: ``REPRO_STEP_MODE`` (``auto``, the default: ``graph``
on CUDA, ``host`` elsewhere). ``host`` is each trainer's original loop, so the CPU's quick and full
runs are bit-identical to before; a device program draws other random numbers than the host loop (the
device's generator, in another order), so a CUDA run's numbers differ from a CPU run's beyond float
rounding. ``eager`` runs the device program without graphs (the fall-back, and how the CPU tests run it).
Used by :func:`lib.mae.train_mae` (chapter 03's SequenceMAE), :func:`lib.multiexit.train_multiexit`
(chapter 05's multi-exit CNNs), :func:`lib.teacher_student.train_deep` (chapter 09's deep students) and
:func:`lib.train.train_minibatch` with :func:`lib.maxmargin.train_adam` (chapter 02's Table 3.1 CNN, chapter
06's pruning CNNs through :func:`lib.pruning.train_cnn`, chapter 07's ensembles through
:func:`lib.annulus_training.train_ball_vs_shell`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

from lib import validate as V

MODES = ("host", "eager", "graph", "compile")
FALLBACKS: list = []  # why a StepRunner's CUDA graph capture failed (it then ran eagerly): for the step-time script


def step_mode(device) -> str:
    """The training path for ``device`` (a ``torch.device``): ``REPRO_STEP_MODE`` if set to one of
    :data:`MODES`, else (``auto``) ``graph`` on CUDA and ``host`` elsewhere. ``graph`` and ``compile``
    need CUDA (a ``ValueError`` on another device)."""
    mode = os.environ.get("REPRO_STEP_MODE", "auto").strip().lower() or "auto"
    if mode == "auto":
        return "graph" if device.type == "cuda" else "host"
    if mode not in MODES:
        raise V.ArgumentValueError(f"REPRO_STEP_MODE must be 'auto' or one of {MODES}, got {mode!r}")
    if mode in ("graph", "compile") and device.type != "cuda":
        raise V.ArgumentValueError(f"REPRO_STEP_MODE={mode!r} needs a CUDA device, got {device}")
    return mode


@contextmanager
def seeded(device, seed: int):
    """A ``with`` block in which ``device``'s default generator is seeded ``seed`` (the device program's
    random numbers) and restored afterwards, as is the CPU's (``torch.random.fork_rng``)."""
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices, device_type="cuda"):
        if device.type == "cuda":
            with torch.cuda.device(device):
                torch.cuda.manual_seed(int(seed))
        else:
            torch.manual_seed(int(seed))
        yield


def categorical(logits) -> torch.Tensor:
    """One index per row of ``logits`` (last axis), drawn with probability ``softmax(logits)`` on their
    device: the exponential race ``argmax(logits - log E)``, ``E ~ Exp(1)`` (Gumbel-max), which is what
    ``torch.multinomial`` does for one draw, without its host-side check of the probabilities. The race times
    are kept above the dtype's smallest normal number, so that a draw of exactly 0 cannot give ``-inf - log 0``
    (NaN, which argmax would pick) on a forbidden (``-inf``) entry."""
    race = torch.empty_like(logits).exponential_().clamp_(min=torch.finfo(logits.dtype).tiny)
    return (logits - race.log()).argmax(-1)


def gradients(loss, params) -> list:
    """``d loss / d params`` (zeros for a parameter the loss does not reach), no ``.grad`` fields touched."""
    return list(torch.autograd.grad(loss, params, allow_unused=True, materialize_grads=True))


def clip_by_norm(grads, max_norm: float) -> list:
    """``grads`` scaled to a joint 2-norm of at most ``max_norm`` (``clip_grad_norm_``'s rule, on the device)."""
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    return [g * scale for g in grads]


class DeviceAdam:
    """Adam (``torch.optim.Adam``'s update: L2 ``weight_decay`` added to the gradient as ``torch.optim.Adam``
    does, no amsgrad) whose state, the step count included, lives in tensors on the parameters' device, so
    that an update launches the same kernels every step and reads nothing back: capturable and traceable.
    ``update(grads)`` changes the parameters in place."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        self.params = list(params)
        if not self.params:
            raise V.ArgumentValueError("DeviceAdam needs at least one parameter")
        self.lr, self.eps = V.positive(lr, "lr"), V.positive(eps, "eps")
        self.b1, self.b2 = (V.real(b, "betas[i]", min=0.0, max=1.0, max_open=True) for b in betas)
        self.wd = V.nonnegative(weight_decay, "weight_decay")
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = torch.zeros((), device=self.params[0].device)

    @torch.no_grad()
    def update(self, grads) -> None:
        grads = [g.detach() for g in grads]
        if self.wd:
            grads = torch._foreach_add(grads, self.params, alpha=self.wd)
        self.t.add_(1.0)
        torch._foreach_lerp_(self.m, grads, 1 - self.b1)
        torch._foreach_mul_(self.v, self.b2)
        torch._foreach_addcmul_(self.v, grads, grads, 1 - self.b2)
        bc1 = 1 - torch.pow(self.b1, self.t)
        bc2 = 1 - torch.pow(self.b2, self.t)
        denom = torch._foreach_div(self.v, bc2)
        torch._foreach_sqrt_(denom)
        torch._foreach_add_(denom, self.eps)
        steps = torch._foreach_div(self.m, denom)
        torch._foreach_mul_(steps, -self.lr / bc1)
        torch._foreach_add_(self.params, steps)


class DeviceSGD:
    """SGD with momentum (``torch.optim.SGD``'s update: dampening 0, Nesterov optional, L2 weight decay) whose
    learning rate ``lr`` is a 0-d tensor on the device (a schedule changes it in place between steps) and whose
    momentum buffers start at zero (which gives ``torch.optim.SGD``'s first step, ``buf = g``)."""

    def __init__(self, params, lr, momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False):
        self.params = list(params)
        if not self.params or not isinstance(lr, torch.Tensor) or lr.ndim != 0:
            raise V.ArgumentValueError("DeviceSGD needs at least one parameter and lr as a 0-d tensor")
        self.lr, self.nesterov = lr, bool(nesterov)
        self.momentum, self.wd = V.nonnegative(momentum, "momentum"), V.nonnegative(weight_decay, "weight_decay")
        self.buf = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def update(self, grads) -> None:
        d = torch._foreach_add([g.detach() for g in grads], self.params, alpha=self.wd)
        torch._foreach_mul_(self.buf, self.momentum)
        torch._foreach_add_(self.buf, d)
        if self.nesterov:
            torch._foreach_add_(d, self.buf, alpha=self.momentum)
        else:
            d = self.buf
        torch._foreach_add_(self.params, torch._foreach_mul(d, -self.lr))


class StepRunner:
    """Runs a device program ``step`` (no arguments; returns a tensor or a tuple of tensors) ``n`` times.

    ``mode``: ``eager`` calls it; ``graph`` runs the first ``warmup`` steps eagerly on a side stream, then
    captures ``chunk`` consecutive steps as one ``torch.cuda.CUDAGraph`` and replays it, and what is left of an
    ``n`` that is not a multiple of ``chunk`` replays a second graph of one step (the same kernels on the same
    tensors); ``compile`` calls ``torch.compile(step, mode="reduce-overhead")``. Every step counts (warm-up
    steps are training steps); ``done`` counts them. :meth:`run` returns the last step's outputs (in ``graph``
    mode a graph's static outputs, which its next replay overwrites: clone what you keep).

    ``ahead`` (graph mode; default None: no limit): after each replay the host records a blocking CUDA event
    and, once more than ``ahead`` replays are queued, sleeps on the oldest one. A host that queues replays
    without waiting fills the GPU's launch queue and then spins in ``cudaGraphLaunch`` until the GPU catches
    up, so that its CPU time equals the wall time (seen on chapter 03's steps, :func:`lib.mae._train_program`);
    :func:`lib.train.train_minibatch`'s device program sets it."""

    def __init__(self, step, mode: str = "eager", chunk: int = 1, warmup: int = 3, ahead: int | None = None):
        if mode not in MODES[1:]:
            raise V.ArgumentValueError(f"mode must be one of {MODES[1:]}, got {mode!r}")
        self.step, self.mode = step, mode
        self.chunk, self.warmup = V.positive_int(chunk, "chunk"), V.nonnegative_int(warmup, "warmup")
        self.ahead, self.queued = None if ahead is None else V.positive_int(ahead, "ahead"), []
        self.graphs, self.out, self.done = {}, None, 0  # graphs: {steps: (CUDAGraph, its static outputs)}
        if mode == "compile":
            import torch._dynamo

            torch._dynamo.config.trace_autograd_ops = torch._dynamo.config.allow_rnn = True
            self.call = torch.compile(step, mode="reduce-overhead")
        else:
            self.call = step

    def _warm(self, k: int):
        """``k`` eager steps on a side stream (CUDA graphs want their warm-up there)."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(k):
                self.out = self.step()
        torch.cuda.current_stream().wait_stream(stream)
        self.done += k

    def _graph(self, size: int):
        """The graph of ``size`` consecutive steps, recorded on first use (recording runs nothing). If the capture
        fails (an operation that a graph cannot hold), warn, note it in :data:`FALLBACKS` and return None: the
        runner goes on eagerly, the same steps without graphs."""
        import warnings

        if size in self.graphs:
            return self.graphs[size]
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                for _ in range(size):
                    static = self.step()
        except Exception as exc:  # the captured steps did not run: the state is that of the last eager step
            self.mode = "eager"
            FALLBACKS.append(f"{type(exc).__name__}: {exc}")
            warnings.warn(f"CUDA graph capture failed ({type(exc).__name__}: {exc}); the device program runs "
                          "eagerly", RuntimeWarning, stacklevel=3)
            torch.cuda.synchronize()
            return None
        self.graphs[size] = graph, static
        return self.graphs[size]

    def _throttle(self):
        """With ``ahead``: an event after the replay just queued; sleep on the oldest while more are queued."""
        if self.ahead is None:
            return
        self.queued.append(torch.cuda.Event(blocking=True))
        self.queued[-1].record()
        if len(self.queued) > self.ahead:
            self.queued.pop(0).synchronize()

    def run(self, n: int):
        """``n`` more steps (``n >= 0``); the outputs of the last one (``None`` if none ran yet)."""
        n = V.nonnegative_int(n, "n")
        if self.mode == "graph":
            warm = min(n, max(0, self.warmup - self.done))
            if warm:
                self._warm(warm)
                n -= warm
            for size in sorted({self.chunk, 1}, reverse=True):
                while n >= size and self.mode == "graph":
                    graph, static = self._graph(size) or (None, None)
                    if graph is None:
                        break
                    graph.replay()
                    self.out, n, self.done = static, n - size, self.done + size
                    self._throttle()
        for _ in range(n):
            self.out = self.call()
            self.done += 1
        return self.out


def operator_calls(fn, *args) -> int:
    """How many ATen operators one call ``fn(*args)`` launches (``torch.profiler``, CPU activity): what a
    device program's host-side cost grows with (the CPU guard checks that it does not grow with the number
    of models batched)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    return sum(e.count for e in prof.key_averages() if e.key.startswith("aten::"))
