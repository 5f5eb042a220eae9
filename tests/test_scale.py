from dataclasses import dataclass

import pytest
import torch

from lib import scale, smoke


@dataclass(frozen=True)
class Cfg:
    n: int


CH = scale.ChapterScales("how_to_read", quick=Cfg(1), full=Cfg(2), paper=Cfg(3))


def test_default_scale_is_quick(monkeypatch):
    monkeypatch.delenv("REPRO_SCALE")
    assert scale.current_scale() == "quick"
    assert CH.current == Cfg(1)


@pytest.mark.parametrize("name,n", [("quick", 1), ("full", 2), ("paper", 3), (" FULL ", 2)])
def test_scale_selects_config(monkeypatch, name, n):
    monkeypatch.setenv("REPRO_SCALE", name)
    assert CH.current.n == n


def test_unknown_scale_is_rejected(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "huge")
    with pytest.raises(ValueError, match="REPRO_SCALE must be one of"):
        scale.current_scale()
    with pytest.raises(ValueError, match="scale must be one of"):
        CH.for_scale("huge")


def test_seeds_shift_with_repro_seed(monkeypatch):
    assert scale.seeds(3) == [0, 1, 2]
    monkeypatch.setenv("REPRO_SEED", "2")
    assert scale.seeds(3) == [2000, 2001, 2002]
    assert scale.seed(5) == 2005


@pytest.mark.parametrize("raw", ["-1", "abc", "1.5"])
def test_bad_repro_seed(monkeypatch, raw):
    monkeypatch.setenv("REPRO_SEED", raw)
    with pytest.raises(ValueError, match="REPRO_SEED"):
        scale.seed_offset()


@pytest.mark.parametrize("bad", [0, -1, 1001, 2.0, True])
def test_bad_seed_counts(bad):
    with pytest.raises(ValueError):
        scale.seeds(bad)


def test_bad_seed_index():
    with pytest.raises(ValueError):
        scale.seed(1000)


def test_chapter_scales_validation():
    with pytest.raises(ValueError, match="one type"):
        scale.ChapterScales("how_to_read", quick=Cfg(1), full={"n": 2}, paper=Cfg(3))
    with pytest.raises(ValueError, match="identifier"):
        scale.ChapterScales("bad name", quick=Cfg(1), full=Cfg(2), paper=Cfg(3))


def test_set_threads_and_banner():
    import torch

    from threadpoolctl import threadpool_info

    assert scale.set_threads(1) == 1 and torch.get_num_threads() == 1
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    with pytest.raises(ValueError):
        scale.set_threads(0)
    text = scale.banner(CH)
    assert "scale = 'quick'" in text and "Cfg(n=1)" in text


def test_thread_count_reads_repro_threads(monkeypatch):
    monkeypatch.delenv("REPRO_THREADS", raising=False)
    assert scale.thread_count() == 1
    monkeypatch.setenv("REPRO_THREADS", " 2 ")
    assert scale.thread_count() == 2 and "REPRO_THREADS = 2" in scale.banner(CH)
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("REPRO_THREADS", bad)
        with pytest.raises(ValueError, match="REPRO_THREADS"):
            scale.thread_count()


@pytest.mark.parametrize("raw", [None, "", "  "])
def test_unset_or_blank_variables_take_their_defaults(monkeypatch, raw):
    for name in ("REPRO_SCALE", "REPRO_SEED", "REPRO_THREADS"):
        if raw is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, raw)
    assert (scale.current_scale(), scale.seed_offset(), scale.thread_count()) == ("quick", 0, 1)
    assert scale.seeds(2) == [0, 1]


def test_seed_counts_and_indices_at_their_bounds(monkeypatch):
    monkeypatch.setenv("REPRO_SEED", "3")
    assert scale.seeds(1) == [3000]
    assert scale.seeds(1000)[-1] == 3999 and len(scale.seeds(1000)) == 1000
    assert scale.seed() == 3000 and scale.seed(999) == 3999
    with pytest.raises(ValueError, match=r"number of seeds must be an int in \[1, 1000\], got 0"):
        scale.seeds(0)
    with pytest.raises(ValueError, match=r"seed index must be an int in \[0, 1000\), got -1"):
        scale.seed(-1)
    with pytest.raises(ValueError, match="seed index"):
        scale.seed(True)


def test_error_messages_name_the_variable_and_the_value(monkeypatch):
    monkeypatch.setenv("REPRO_SEED", "-2")
    with pytest.raises(ValueError, match="^REPRO_SEED must be a non-negative integer, got -2$"):
        scale.seed_offset()
    monkeypatch.setenv("REPRO_SEED", "x")
    with pytest.raises(ValueError, match="^REPRO_SEED must be a non-negative integer, got 'x'$"):
        scale.seed_offset()
    monkeypatch.setenv("REPRO_THREADS", "0")
    with pytest.raises(ValueError, match="^REPRO_THREADS must be a positive integer, got 0$"):
        scale.thread_count()
    monkeypatch.setenv("REPRO_SCALE", "Huge")
    with pytest.raises(ValueError, match=r"REPRO_SCALE must be one of \('quick', 'full', 'paper'\), got 'huge'"):
        scale.current_scale()


def test_set_threads_defaults_to_one_and_pins_both_pools():
    import torch

    from threadpoolctl import threadpool_info

    assert scale.set_threads(2) == 2 and torch.get_num_threads() == 2
    assert scale.set_threads() == 1 and torch.get_num_threads() == 1
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    for bad in (0, 1.0, True):
        with pytest.raises(ValueError, match="thread count must be a positive int"):
            scale.set_threads(bad)


def test_set_threads_passes_its_count_to_the_blas_pools(monkeypatch):
    # (a process pinned to one core caps the BLAS pools at 1 whatever they are told: spy on the call)
    import threadpoolctl

    told = []
    monkeypatch.setattr(threadpoolctl, "threadpool_limits", lambda n: told.append(n))
    scale.set_threads(3)
    scale.set_threads()
    assert told == [3, 1]


def test_chapter_scales_messages_and_selection():
    with pytest.raises(TypeError, match=r"^chapter must be a str \(the chapter key\), got 3$"):
        scale.ChapterScales(3, quick=Cfg(1), full=Cfg(2), paper=Cfg(3))
    for bad in ("", "a-b", "_", "__"):
        with pytest.raises(ValueError, match="chapter key must be a non-empty identifier"):
            scale.ChapterScales(bad, quick=Cfg(1), full=Cfg(2), paper=Cfg(3))
    with pytest.raises(ValueError, match=r"^chapter key must be one of lib.scale.CHAPTER_KEYS .*got 'a_b1'$"):
        scale.ChapterScales("a_b1", quick=Cfg(1), full=Cfg(2), paper=Cfg(3))  # a well-formed key no chapter has
    for key in scale.CHAPTER_KEYS:
        assert scale.ChapterScales(key, quick=Cfg(1), full=Cfg(2), paper=Cfg(3)).chapter == key
    assert [CH.for_scale(s).n for s in scale.SCALES] == [1, 2, 3]


def test_banner_states_every_setting(monkeypatch):
    monkeypatch.setenv("REPRO_SEED", "4")
    monkeypatch.setenv("REPRO_SCALE", "full")
    monkeypatch.delenv("REPRO_DEVICE", raising=False)
    text = scale.banner(CH)
    assert text.startswith("Chapter 'how_to_read': scale = 'full', seed offset REPRO_SEED = 4, threads REPRO_THREADS = 1, "
                           "device REPRO_DEVICE = auto -> cpu.\n")
    assert text.split("\n", 1)[1] == (
        "Config: Cfg(n=2)\n"
        "Change with the environment variables REPRO_SCALE=quick|full|paper, REPRO_SEED=<int>, "
        "REPRO_THREADS=<int> and REPRO_DEVICE=auto|cpu|cuda|mps (set them before starting Jupyter, or in Colab "
        "with os.environ before the bootstrap cell).")
    with pytest.raises(TypeError, match="^chapter must be a ChapterScales, got str 'demo'$"):
        scale.banner("demo")


# --- REPRO_DEVICE and the paper smoke switch (issue 22) -------------------------------------------

def _fake_devices(monkeypatch, cuda: bool = False, mps: bool = False):
    monkeypatch.setattr(scale, "_available", lambda kind: {"cuda": cuda, "mps": mps}[kind])


@pytest.mark.parametrize("scale_name", ["quick", "full", "paper"])
def test_auto_device_is_the_cpu_without_cuda(monkeypatch, scale_name):
    monkeypatch.setenv("REPRO_SCALE", scale_name)
    monkeypatch.delenv("REPRO_DEVICE", raising=False)
    _fake_devices(monkeypatch)
    assert scale.device_choice() == "auto" and str(scale.current_device()) == "cpu"


@pytest.mark.parametrize("scale_name,smoke,want", [("quick", "0", "cpu"), ("full", "0", "cpu"),
                                                   ("paper", "0", "cuda"), ("paper", "1", "cpu")])
def test_auto_device_takes_cuda_only_for_a_real_paper_run(monkeypatch, scale_name, smoke, want):
    monkeypatch.setenv("REPRO_SCALE", scale_name)
    monkeypatch.setenv("REPRO_DEVICE", " AUTO ")
    if scale_name == "paper":
        monkeypatch.setenv("REPRO_PAPER_SMOKE", smoke)
    _fake_devices(monkeypatch, cuda=True, mps=True)
    assert str(scale.current_device()) == want


def test_explicit_devices(monkeypatch):
    _fake_devices(monkeypatch, cuda=True)
    for name in ("cpu", "cuda"):
        monkeypatch.setenv("REPRO_DEVICE", name)
        assert str(scale.current_device()) == name  # at quick scale too: an explicit choice wins
    monkeypatch.setenv("REPRO_DEVICE", "mps")
    with pytest.raises(ValueError, match="^REPRO_DEVICE='mps', but this machine has no mps device"):
        scale.current_device()
    _fake_devices(monkeypatch, mps=True)
    assert str(scale.current_device()) == "mps"
    monkeypatch.setenv("REPRO_DEVICE", "cuda")
    with pytest.raises(ValueError, match="no cuda device"):
        scale.current_device()
    monkeypatch.setenv("REPRO_DEVICE", "")
    assert scale.device_choice() == "auto"


@pytest.mark.parametrize("bad", ["gpu", "cuda:0", "tpu", "1"])
def test_bad_repro_device(monkeypatch, bad):
    monkeypatch.setenv("REPRO_DEVICE", bad)
    with pytest.raises(ValueError, match=r"^REPRO_DEVICE must be one of \('auto', 'cpu', 'cuda', 'mps'\), got"):
        scale.current_device()


def test_real_cpu_device_and_torch_availability(monkeypatch):
    import torch

    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    assert scale.current_device() == torch.device("cpu")
    assert scale._available("cuda") == torch.cuda.is_available()
    assert scale._available("mps") == bool(torch.backends.mps.is_available())


def test_as_device(monkeypatch):
    import torch

    _fake_devices(monkeypatch, cuda=True)
    monkeypatch.setenv("REPRO_DEVICE", "cuda")
    assert scale.as_device() == torch.device("cuda")                 # None: REPRO_DEVICE
    assert scale.as_device("cpu") == torch.device("cpu")
    assert scale.as_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    assert scale.as_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(TypeError, match="^dev must be None, a str or a torch.device, got 3$"):
        scale.as_device(3, "dev")
    for bad in ("gpu", "xla", "cuda:x", ""):
        with pytest.raises(ValueError, match=r"^device must be one of \('cpu', 'cuda', 'mps'\) \(or cuda:<index>\), got"):
            scale.as_device(bad)
    with pytest.raises(ValueError, match="^device is 'mps', but this machine has no mps device$"):
        scale.as_device("mps")


def test_paper_smoke_switch(monkeypatch):
    monkeypatch.delenv("REPRO_PAPER_SMOKE", raising=False)
    assert scale.paper_smoke() is False
    monkeypatch.setenv("REPRO_PAPER_SMOKE", " 0 ")
    assert scale.paper_smoke() is False
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    for other in ("quick", "full"):  # never a fourth scale: only with the paper scale
        monkeypatch.setenv("REPRO_SCALE", other)
        with pytest.raises(ValueError, match=f"^REPRO_PAPER_SMOKE=1 needs REPRO_SCALE=paper .*got REPRO_SCALE='{other}'"):
            scale.paper_smoke()
    monkeypatch.setenv("REPRO_SCALE", "paper")
    assert scale.paper_smoke() is True
    for bad in ("yes", "2", "true"):
        monkeypatch.setenv("REPRO_PAPER_SMOKE", bad)
        with pytest.raises(ValueError, match=f"^REPRO_PAPER_SMOKE must be 0 or 1, got '{bad}'"):
            scale.paper_smoke()


@dataclass(frozen=True)
class Run:
    steps: int = 10000
    width: int = 256


def test_chapter_scales_in_a_smoke_run(monkeypatch):
    ch = scale.ChapterScales("how_to_read", quick=Run(steps=1), full=Run(steps=2), paper=Run())
    monkeypatch.setenv("REPRO_SCALE", "paper")
    assert ch.current == Run() and ch.for_scale("paper") == Run()
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    assert ch.current == Run(steps=10) == ch.for_scale("paper") == smoke.smoke_config(Run())
    assert ch.for_scale("full") == Run(steps=2) and ch.paper == Run()  # only the paper config shrinks
    monkeypatch.setitem(smoke.SMOKE_OVERRIDES, "how_to_read", {"steps": smoke.QUICK})
    assert ch.current == Run(steps=1)                  # the chapter's key and its quick config reach lib.smoke
    text = scale.banner(ch)
    assert text.startswith("PAPER-SMOKE RUN (REPRO_PAPER_SMOKE=1, a test of the code path, not a result): "
                           "synthetic stand-ins for the downloads and a few steps; its numbers mean nothing and "
                           "nothing is saved under results/.\nChapter 'how_to_read': scale = 'paper'")
    assert "Config: Run(steps=1, width=256)" in text
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "0")
    assert scale.banner(ch).startswith("Chapter 'how_to_read': scale = 'paper'")


@pytest.mark.parametrize("cuda,mps", [(True, False), (False, True), (True, True), (False, False)])
def test_available_asks_torch_for_each_kind(monkeypatch, cuda, mps):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert scale._available("cuda") is cuda and scale._available("mps") is mps


def test_available_without_an_mps_backend(monkeypatch):
    import torch

    monkeypatch.delattr(torch.backends, "mps")  # an older torch: no MPS backend at all
    assert scale._available("mps") is False


def test_missing_device_message_in_full(monkeypatch):
    _fake_devices(monkeypatch)
    monkeypatch.setenv("REPRO_DEVICE", "cuda")
    with pytest.raises(ValueError, match=r"^REPRO_DEVICE='cuda', but this machine has no cuda device "
                                         r"\(use REPRO_DEVICE=auto or cpu\)$"):
        scale.current_device()


class _Spy(torch.nn.Linear):
    """Records every device it is moved to."""

    def to(self, *args, **kwargs):
        self.moves.append(torch.device(args[0]))
        return super().to(*args, **kwargs)


def test_on_device_moves_the_model_there_and_back_also_after_a_failure(monkeypatch):
    monkeypatch.delenv("REPRO_SCALE", raising=False)
    monkeypatch.setenv("REPRO_DEVICE", "auto")
    model = _Spy(2, 1)
    model.moves = []
    with scale.on_device(model) as dev:           # REPRO_DEVICE=auto at quick scale: the CPU
        assert dev == torch.device("cpu") and model.moves == [dev]
    assert model.moves == [dev, dev]
    model.moves = []
    with pytest.raises(RuntimeError, match="inside"):
        with scale.on_device(model, "cpu"):
            raise RuntimeError("inside")
    assert model.moves == [dev, dev]               # home after a failure too
    model.moves = []
    for bad, error in (("gpu", ValueError), (0, TypeError)):
        with pytest.raises(error, match="^device"):
            with scale.on_device(model, bad):
                pass
    assert model.moves == []                       # refused before anything moves
    with pytest.raises(ValueError, match="^device"):
        scale.on_device(model, "gpu")              # already when called, not only on entering the block
    with pytest.raises(TypeError, match="^model must be a torch.nn.Module"):
        scale.on_device("abc")
    assert scale.model_device(torch.nn.ReLU()) == torch.device("cpu")
    assert scale.model_device(model.to("meta")) == torch.device("meta")


def test_chapter_keys_are_the_results_folders_and_the_chapters_keys():
    """Every key has its folder under results/ and a notebook (or lib module) that declares it, and back."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    folders = {p.name for p in (root / "results").iterdir() if p.is_dir() and p.name != "gpu_check"}
    assert folders == set(scale.CHAPTER_KEYS)
    import nbformat

    sources = [c.source for p in root.glob("chapters/*.ipynb") for c in nbformat.read(p, 4).cells]
    sources += [p.read_text() for p in root.glob("lib/*.py")]
    declared = {k for text in sources for k in re.findall(r'ChapterScales\(\s*"([a-z_0-9]+)"', text)}
    assert declared == set(scale.CHAPTER_KEYS)
    assert len(scale.CHAPTER_KEYS) == len(set(scale.CHAPTER_KEYS))
