"""Chapter metrics with provenance under ``results/`` and the "Paper vs this book" table.

Every chapter saves its full-scale metrics with :func:`save_results` (the committed
``results/<chapter>/full.json``) and shows them next to the document's numbers and the current run's
with :func:`paper_vs_ours`. A quick-scale run never writes under ``results/``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from lib import validate as V
from lib.scale import CHAPTER_KEYS, SCALES, current_scale, paper_smoke, seed_offset

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "results"
TABLE_COLUMNS = ("quantity", "paper", "this_run", "full", "note")
TABLE_HEADERS = ("Quantity", "Document", "This run", "Committed full run", "Note")


def _to_jsonable(value):
    """Convert numpy scalars/arrays (and nested containers) to plain JSON types; reject NaN keys."""
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # torch tensors
        return _to_jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN/inf; a missing value reads as None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"cannot store a value of type {type(value).__name__} in results JSON")


def git_commit(root: Path | None = None) -> str:
    """The repository's current commit (with ``-dirty`` if tracked files changed), or ``unknown``.

    Changes under ``results/`` do not count: they are the runs' outputs, not the code that made them
    (so one full run after another, ``REPRO_SCALE=full python -m lib.run chapters/*.ipynb``, works).
    """
    root = root or REPO_ROOT
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)results"], cwd=root, capture_output=True, text=True, timeout=10).stdout
        return head + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(seeds, wall_time_s: float, scale: str | None = None) -> dict:
    """Where and how a result was made: scale, seeds, commit, date, machine, wall time.

    ``seeds``: a list of ints >= 0; ``wall_time_s`` >= 0; ``scale=None`` means the active scale."""
    import torch

    seeds = [V.seed(s, "seeds[i]") for s in V.sequence(seeds, "seeds")]
    wall_time_s = V.nonnegative(wall_time_s, "wall_time_s")
    if scale is not None:
        V.choice(scale, "scale", SCALES)

    return {
        "scale": scale or current_scale(),
        "seed_offset": seed_offset(),
        "seeds": [int(s) for s in seeds],
        "git_commit": git_commit(),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.machine(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
        "wall_time_s": round(float(wall_time_s), 3),
    }


def _check_chapter(chapter: str) -> None:
    V.instance(chapter, "chapter", str, "a str (the chapter key)")
    if not chapter or not chapter.replace("_", "").isalnum():
        raise ValueError(f"chapter key must be a non-empty identifier like 'boolean_swaps', got {chapter!r}")


def results_path(chapter: str, scale: str = "full", root: Path | None = None) -> Path:
    """``results/<chapter>/<scale>.json``; under the book's own ``results/`` (``root=None``) the chapter
    must be one of :data:`lib.scale.CHAPTER_KEYS`, so that a typo cannot write (or read) a new folder."""
    _check_chapter(chapter)
    if root is None and chapter not in CHAPTER_KEYS:
        raise ValueError(f"chapter must be one of lib.scale.CHAPTER_KEYS to use the book's results/, "
                         f"got {chapter!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return (root or RESULTS_DIR) / chapter / f"{scale}.json"


class DirtyTreeError(RuntimeError):
    """A full or paper run from a tree with uncommitted changes: its record could not name its code."""


def dirty_allowed(allow_dirty: bool | None = None) -> bool:
    """``allow_dirty`` if given, else whether ``REPRO_ALLOW_DIRTY`` is ``1``."""
    if allow_dirty is not None:
        return bool(allow_dirty)
    return os.environ.get("REPRO_ALLOW_DIRTY", "").strip() == "1"


def require_clean_tree(allow_dirty: bool | None = None) -> str:
    """The current commit; at full and paper scale raise :class:`DirtyTreeError` if it is ``-dirty``.

    Quick runs never save results, so any tree will do for them. ``allow_dirty=True`` (or
    ``REPRO_ALLOW_DIRTY=1``) lets a run through; its record then says ``-dirty``.
    """
    commit = git_commit()
    if current_scale() != "quick" and commit.endswith("-dirty") and not dirty_allowed(allow_dirty) \
            and not paper_smoke():  # a smoke run saves nothing (save_results refuses)
        raise DirtyTreeError(
            f"a {current_scale()!r} run saves results/ with the commit that made them, but the tree has "
            f"uncommitted changes ({commit}): commit them first, or set REPRO_ALLOW_DIRTY=1 for a "
            "record marked -dirty")
    return commit


def save_results(chapter: str, metrics: dict, *, seeds, wall_time_s: float, config=None,
                 root: Path | None = None, allow_dirty: bool | None = None) -> Path | None:
    """Write ``metrics`` with provenance to ``results/<chapter>/<scale>.json`` atomically.

    At quick scale nothing is written (returns ``None``): only full and paper runs are kept, and
    only from a clean tree (:func:`require_clean_tree`; ``allow_dirty`` overrides).
    ``config`` (e.g. the chapter's dataclass) is stored as its ``repr`` for the record.
    """
    if not isinstance(metrics, dict) or not metrics:
        raise ValueError("metrics must be a non-empty dict")
    wall_time_s = V.nonnegative(wall_time_s, "wall_time_s")
    seeds = [V.seed(s, "seeds[i]") for s in V.sequence(seeds, "seeds")]
    scale = current_scale()
    path = results_path(chapter, scale, root)
    if scale == "quick":
        print(f"quick scale: results not saved (a {scale!r} run never writes under results/)")
        return None
    if paper_smoke():  # REPRO_PAPER_SMOKE=1: tiny synthetic data, numbers that mean nothing
        print("paper-smoke run: results not saved (a smoke run of the paper path is no result; "
              "unset REPRO_PAPER_SMOKE for a real paper-scale run)")
        return None
    require_clean_tree(allow_dirty)
    record = {
        "chapter": chapter,
        "metrics": _to_jsonable(metrics),
        "provenance": provenance(seeds, wall_time_s, scale),
        "config": None if config is None else repr(config),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be read by everyone
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)  # atomic on POSIX: readers see the old or the new file, never half
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    print(f"saved {path.relative_to(path.parents[2]) if root is None else path}")
    return path


def load_results(chapter: str, scale: str = "full", root: Path | None = None) -> dict | None:
    """The saved record (keys ``metrics``, ``provenance``, ``config``), or ``None`` if absent."""
    path = results_path(chapter, scale, root)
    if not path.exists():
        return None
    with open(path) as fh:
        return json.load(fh)


def format_value(value, digits: int = 3) -> str:
    """How a table cell shows a value: ``—`` for missing, ``digits`` significant digits for floats."""
    digits = V.positive_int(digits, "digits")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.{digits}g}"
    return str(value)


def markdown_table(header, rows, digits: int = 3) -> str:
    """A Markdown table of computed values (cells formatted by :func:`format_value`, ``|`` escaped)."""
    header = V.sequence(header, "header", min_len=1)
    digits = V.positive_int(digits, "digits")
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise V.ArgumentTypeError(f"rows must be an iterable of rows, got {V.describe(rows)}")
    cell = lambda v: format_value(v, digits).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} cells, the header {len(header)}")
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)


def paper_vs_ours_markdown(rows, digits: int = 3) -> str:
    """The "Paper vs this book" table as Markdown text (see :func:`paper_vs_ours`)."""
    rows = V.sequence(rows, "rows")
    digits = V.positive_int(digits, "digits")
    if not rows:
        raise ValueError("rows: paper_vs_ours needs at least one row")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "quantity" not in row:
            raise ValueError(f"row {i} must be a dict with at least a 'quantity' key, got {row!r}")
        unknown = set(row) - set(TABLE_COLUMNS)
        if unknown:
            raise ValueError(f"row {i} has unknown keys {sorted(unknown)}; allowed: {TABLE_COLUMNS}")
    return markdown_table(TABLE_HEADERS, ([row.get(k) for k in TABLE_COLUMNS] for row in rows), digits)


def paper_vs_ours(rows, digits: int = 3):
    """Display object for the "Paper vs this book" table (renders in Jupyter and in the book).

    ``rows``: dicts with ``quantity`` and any of ``paper`` (the document's number), ``this_run``,
    ``full`` (the committed full-scale number) and ``note`` (the sentence explaining a difference).
    """
    from IPython.display import Markdown

    return Markdown(paper_vs_ours_markdown(rows, digits))
