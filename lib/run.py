"""Execute chapter notebooks from the command line and report their wall time.

    python -m lib.run chapters/06_boolean_swaps.ipynb            # at the scale in REPRO_SCALE
    REPRO_SCALE=full python -m lib.run chapters/*.ipynb           # full scale: writes results/
    python -m lib.run --table chapters/*.ipynb                     # Markdown table of times

Each notebook runs in a fresh kernel with its own folder as working directory, as in the book build;
the executed copy is written to ``--out`` (default: a temporary folder), never over the source.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from lib.scale import current_scale


def execute(path: Path, out_dir: Path, timeout: int = 1800) -> float:
    """Run one notebook top to bottom; return its wall time in seconds (raises on a failing cell)."""
    import nbformat
    from nbclient import NotebookClient

    if path.suffix != ".ipynb" or not path.exists():
        raise ValueError(f"expected an existing .ipynb file, got {path}")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent.resolve())}}).execute()
    elapsed = time.perf_counter() - start
    nbformat.write(nb, out_dir / path.name)
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="folder for the executed copies")
    parser.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds")
    parser.add_argument("--table", action="store_true", help="print a Markdown table of the times")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="book-run-"))
    out.mkdir(parents=True, exist_ok=True)
    scale, times, failed = current_scale(), {}, []
    for nb in args.notebooks:
        try:
            times[nb.name] = execute(nb, out, args.timeout)
            print(f"{nb.name}: {times[nb.name]:.1f} s at scale {scale!r} (executed copy in {out})", flush=True)
        except Exception as err:  # report every notebook, then fail
            failed.append(nb.name)
            print(f"{nb.name}: FAILED: {type(err).__name__}: {str(err)[-2000:]}", file=sys.stderr, flush=True)
    if args.table:
        print(f"\n| chapter | wall time at scale `{scale}` (s) |\n|---|---|")
        for name, t in times.items():
            print(f"| {name} | {t:.1f} |")
        print(f"| **total** | {sum(times.values()):.1f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
