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
