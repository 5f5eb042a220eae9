from dataclasses import dataclass

import pytest

from lib import scale


@dataclass(frozen=True)
class Cfg:
    n: int


CH = scale.ChapterScales("demo", quick=Cfg(1), full=Cfg(2), paper=Cfg(3))


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
        scale.ChapterScales("x", quick=Cfg(1), full={"n": 2}, paper=Cfg(3))
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
    assert scale.ChapterScales("a_b1", quick=Cfg(1), full=Cfg(2), paper=Cfg(3)).chapter == "a_b1"
    assert [CH.for_scale(s).n for s in scale.SCALES] == [1, 2, 3]


def test_banner_states_every_setting(monkeypatch):
    monkeypatch.setenv("REPRO_SEED", "4")
    monkeypatch.setenv("REPRO_SCALE", "full")
    text = scale.banner(CH)
    assert text.startswith("Chapter 'demo': scale = 'full', seed offset REPRO_SEED = 4, threads REPRO_THREADS = 1.\n")
    assert text.split("\n", 1)[1] == (
        "Config: Cfg(n=2)\n"
        "Change with the environment variables REPRO_SCALE=quick|full|paper, REPRO_SEED=<int> and "
        "REPRO_THREADS=<int> (set them before starting Jupyter, or in Colab with os.environ before the "
        "bootstrap cell).")
    with pytest.raises(TypeError, match="^chapter must be a ChapterScales, got str 'demo'$"):
        scale.banner("demo")
