import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lib import notebook, plotting  # noqa: E402
from lib.scale import ChapterScales  # noqa: E402


def test_style_and_band():
    plotting.use_book_style()
    assert matplotlib.rcParams["axes.spines.top"] is False
    fig, ax = plt.subplots()
    line = plotting.band(ax, [0, 1, 2], np.array([[1.0, 2.0, 3.0], [1.2, 2.2, 3.2]]), label="x")
    assert np.allclose(line.get_ydata(), [1.1, 2.1, 3.1])
    with pytest.raises(ValueError, match="shape"):
        plotting.band(ax, [0, 1], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        plotting.band(ax, [0, 1], np.array([[0.0, np.nan]]))
    plt.close(fig)


def test_decision_regions():
    fig, ax = plt.subplots()
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    cs = plotting.decision_regions(ax, lambda P: P[:, 0] - 0.5, X, np.array([0, 1]), resolution=20)
    # the zero level set of x - 0.5 is the vertical segment x = 0.5 across the box [-0.3, 1.3]^2
    line = np.concatenate([seg for seg in cs.allsegs[0]])
    assert np.allclose(line[:, 0], 0.5) and line[:, 1].min() == pytest.approx(-0.3) and line[:, 1].max() == pytest.approx(1.3)
    # the points are drawn in their class colours, the box has the margin, the shading covers both sides
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_hex

    points = [(c.get_offsets().tolist(), to_hex(c.get_facecolor()[0])) for c in ax.collections
              if isinstance(c, PathCollection)]
    assert points == [([[0.0, 0.0]], "#0072b2"), ([[1.0, 1.0]], "#d55e00")]
    assert ax.get_xlim() == pytest.approx((-0.3, 1.3)) and ax.get_ylim() == pytest.approx((-0.3, 1.3))
    shading = ax.collections[0]  # two filled regions, class 0 left of x = 0.5 and class 1 right of it
    assert len(shading.get_paths()) == 2
    left, right = (p.vertices[:, 0] for p in shading.get_paths())
    assert left.max() <= 0.5 + 1e-9 <= right.min() + 2e-9
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        plotting.decision_regions(ax, lambda P: P[:, 0], np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="y must"):
        plotting.decision_regions(ax, lambda P: P[:, 0], X, np.zeros(3))
    plt.close(fig)


def test_show_source_and_stopwatch(capsys):
    md = notebook.show_source(plotting.band)
    assert "def band(" in md.data and "lib.plotting.band" in md.data
    with pytest.raises(ValueError):
        notebook.show_source(42)
    watch = notebook.Stopwatch()
    assert watch.report(budget_s=90) >= 0
    assert "budget" in capsys.readouterr().out


def test_setup_prints_banner(capsys):
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class C:
        k: int = 1
    notebook.setup(ChapterScales("how_to_read", quick=C(), full=C(2), paper=C(3)))
    assert "scale = 'quick'" in capsys.readouterr().out
    with pytest.raises(ValueError):
        notebook.setup("demo")


def test_setup_pins_repro_threads_and_starts_the_check_record(monkeypatch, capsys):
    import torch
    from dataclasses import dataclass

    from lib import checks

    @dataclass(frozen=True)
    class C:
        k: int = 1
    chapter = ChapterScales("how_to_read", quick=C(), full=C(2), paper=C(3))
    monkeypatch.setenv("REPRO_THREADS", "2")
    checks.RECORDS.append({"check": "stale"})
    try:
        notebook.setup(chapter)
        assert torch.get_num_threads() == 2 and checks.RECORDS == [{"chapter": "how_to_read"}]
        notebook.setup(chapter, threads=1)  # an explicit count wins
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(1)
        checks.RECORDS.clear()
