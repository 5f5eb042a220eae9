"""Run a chapter notebook over many seeds and report every check's smallest margin.

    python -m lib.sweep chapters/05_multi_exit.ipynb                 # seeds 0-19, then 0-4 on 2 threads
    python -m lib.sweep chapters/05_multi_exit.ipynb --seeds 0-2 --alt-seeds ""   # a first look
    python -m lib.sweep chapters/*.ipynb --write                      # results/<chapter>/seeds.json

Each run executes the notebook at quick scale in a fresh kernel (``lib.run``) with ``REPRO_SEED`` set,
collecting the records of its :func:`lib.checks.check` calls. One-thread runs go two at a time on two
cores (``--jobs``); runs with more threads go one at a time. The summary gives per seed pass/fail and
per check the smallest margin seen, the seed it came from, and the margin in units of the checked
value's seed-to-seed standard deviation: a check is robust when that number is large, not merely
positive. A check is *thin* when the typical run (the mean value) is under
:data:`MEAN_MARGIN_SDS` spreads from its threshold or the worst run under :data:`SMALLEST_MARGIN_SDS`:
at 20 seeds that is not enough room for a reader's seed or CPU; the summary flags such checks and a
structure test refuses them in a committed record. Checks of the committed full run
(:func:`lib.checks.check_full_run`) read the same file in every run: they are reported as constant,
with no margin against a spread. ``--write`` stores it, with provenance, as ``results/<chapter>/seeds.json``; a tree with
uncommitted changes is refused (the record must name the code that produced it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lib.checks import CHECKS_FILE_ENV, margin
from lib.run import repo_root

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colour codes of IPython tracebacks
MEAN_MARGIN_SDS = 4.0      # a statistical check's mean value must be this many seed-to-seed sds inside,
SMALLEST_MARGIN_SDS = 2.0  # and its worst run this many (issue 32: 1-2 sds failed at unseen seeds)


def parse_seeds(text: str) -> list[int]:
    """``"0-19"``, ``"0,3,7"``, ``"0-4,20-22"`` -> sorted distinct seeds; ``""`` -> no seeds."""
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, sep, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"seeds must look like '0-19' or '0,3,7', got {text!r}") from None
        if a < 0 or b < a:
            raise ValueError(f"bad seed range {part!r} in {text!r}: need 0 <= first <= last")
        out.update(range(a, b + 1))
    return sorted(out)


@dataclass
class Run:
    """One execution of a notebook: its seed, thread count, outcome and check records."""

    seed: int
    threads: int
    passed: bool = False
    wall_s: float = 0.0
    error: str = ""
    chapter: str | None = None
    checks: list[dict] = field(default_factory=list)


def run_once(notebook: Path, seed: int, threads: int, cell_timeout: int) -> Run:
    """Execute ``notebook`` at quick scale with ``REPRO_SEED=seed`` in a fresh kernel."""
    root = repo_root(notebook)
    run = Run(seed, threads)
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        records = Path(tmp) / "checks.jsonl"
        env = {**os.environ, "REPRO_SCALE": "quick", "REPRO_SEED": str(seed), "REPRO_THREADS": str(threads),
               CHECKS_FILE_ENV: str(records), "PYTHONPATH": str(root)}
        if threads > 1:  # idle OpenMP threads sleep instead of spinning: on a busy machine spinning threads
            env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # of one run starve the other (same arithmetic)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "lib.run", "--timeout", str(cell_timeout), "--out", tmp,
                               str(notebook.resolve())], cwd=root, env=env, capture_output=True, text=True)
        run.wall_s = time.perf_counter() - start
        run.passed = proc.returncode == 0
        if not run.passed:
            run.error = ANSI.sub("", proc.stderr.strip() or proc.stdout.strip())[-1500:]
        lines = records.read_text().splitlines() if records.exists() else []
    for rec in map(json.loads, lines):
        if "chapter" in rec:
            run.chapter = rec["chapter"]
        else:
            run.checks.append(rec)
    return run


def headline(error: str) -> str:
    """The line of a failed run's error that says what failed (the last naming an exception)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^\w*(Error|Exception|Failed)\b", line)]
    return (named or lines or [""])[-1][:300]


def summarise(runs: list[Run]) -> dict:
    """Per check: runs seen, failures, smallest margin (and its seed), value spread, margin / spread."""
    by_name: dict[str, list[tuple[Run, dict]]] = {}
    for run in runs:
        for rec in run.checks:
            by_name.setdefault(rec["check"], []).append((run, rec))
    checks = {}
    for name, seen in by_name.items():
        margins = [(-np.inf if r["margin"] is None else r["margin"], run.seed, run.threads) for run, r in seen]
        worst = min(margins)
        values = np.array([r["value"] for _, r in seen], dtype=float)
        first = seen[0][1]
        committed = bool(first.get("committed"))
        sd = float(np.std(values, ddof=1)) if len(values) > 1 and np.isfinite(values).all() else None
        if committed:  # the committed full run's value: the same in every run, no spread to measure
            sd = None
        checks[name] = {
            "op": first["op"], "threshold": first["threshold"], "runs": len(seen),
            "failures": sum(not r["passed"] for _, r in seen),
            "min_margin": None if not np.isfinite(worst[0]) else worst[0],
            "min_margin_seed": worst[1], "min_margin_threads": worst[2],
            "value_mean": float(np.mean(values)) if np.isfinite(values).all() else None,
            "value_sd": sd,
            "min_margin_over_sd": (worst[0] / sd) if sd and np.isfinite(worst[0]) else None,
            # distance of the typical run from the threshold in seed-to-seed sds: about 3 or more means a
            # new seed (or a reader's CPU) fails the check rarely (~1e-3 per run for a normal spread)
            "mean_margin_over_sd": (margin(float(np.mean(values)), first["op"], first["threshold"]) / sd)
            if sd and np.isfinite(values).all() else None,
            "committed": committed,
            "constant": committed or not sd,
        }
        checks[name]["thin"] = is_thin(checks[name])
    # a check that a failing run never reached is reported by the run's error, not here
    return {"runs": len(runs), "passes": sum(r.passed for r in runs),
            "failed_runs": [{"seed": r.seed, "threads": r.threads, "error": r.error} for r in runs if not r.passed],
            "checks": checks}


def is_thin(c: dict) -> bool:
    """Whether a summarised check has too little room against its seed-to-seed spread (a constant
    check, whose value never varied, has no spread to measure and is not thin; a failing one is)."""
    if c["min_margin"] is None or c["min_margin"] < 0:
        return True
    if c.get("committed") or not c["value_sd"]:
        return False
    return (c["mean_margin_over_sd"] is None or c["mean_margin_over_sd"] < MEAN_MARGIN_SDS
            or c["min_margin_over_sd"] < SMALLEST_MARGIN_SDS)


def sweep(notebook: Path, seeds: list[int], threads: int = 1, alt_seeds=(), alt_threads: int = 2,
          jobs: int = 2, cell_timeout: int = 600, progress=print) -> list[Run]:
    """All runs of one notebook: ``seeds`` on ``threads`` threads, then ``alt_seeds`` on ``alt_threads``."""
    if not notebook.exists() or notebook.suffix != ".ipynb":
        raise ValueError(f"expected an existing .ipynb notebook, got {notebook}")
    if jobs < 1 or threads < 1 or alt_threads < 1 or cell_timeout < 1:
        raise ValueError("jobs, threads, alt_threads and cell_timeout must be positive")
    runs: list[Run] = []
    for batch, n_threads in ((seeds, threads), (alt_seeds, alt_threads)):
        with ThreadPoolExecutor(max(1, jobs // n_threads)) as pool:
            futures = [pool.submit(run_once, notebook, s, n_threads, cell_timeout) for s in batch]
            for fut in futures:
                run = fut.result()
                runs.append(run)
                worst = min((c for c in run.checks if c["margin"] is not None), key=lambda c: c["margin"], default=None)
                note = f"; smallest margin {worst['margin']:.3g} ({worst['check']})" if worst else ""
                status = "pass" if run.passed else "FAIL: " + headline(run.error)
                progress(f"{notebook.name} seed {run.seed} threads {run.threads}: {status} in {run.wall_s:.0f} s{note}")
    return runs


def format_summary(notebook: Path, summary: dict) -> str:
    """A Markdown table of a notebook's checks, smallest margin relative to the seed-to-seed spread first."""
    lines = [f"### {notebook.name}: {summary['passes']} of {summary['runs']} runs pass", "",
             "| check | op | threshold | runs | failures | smallest margin | seed (threads) | value mean | value sd "
             "| smallest margin / sd | mean margin / sd | room |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    fmt = lambda v: "—" if v is None else f"{v:.4g}"  # noqa: E731
    order = sorted(summary["checks"].items(), key=lambda kv: (kv[1]["min_margin_over_sd"] is None,
                                                             kv[1]["min_margin_over_sd"] or 0))
    for name, c in order:
        lines.append(f"| {name} | {c['op']} | {fmt(c['threshold'])} | {c['runs']} | {c['failures']} | "
                     f"{fmt(c['min_margin'])} | {c['min_margin_seed']} ({c['min_margin_threads']}) | "
                     f"{fmt(c['value_mean'])} | {fmt(c['value_sd'])} | {fmt(c['min_margin_over_sd'])} | "
                     f"{fmt(c.get('mean_margin_over_sd'))} | {_room(c)} |")
    thin = [name for name, c in order if c.get("thin")]
    if thin:
        lines.append(f"\nTHIN ({len(thin)}; need mean margin >= {MEAN_MARGIN_SDS:g} sd and smallest >= "
                     f"{SMALLEST_MARGIN_SDS:g} sd): " + "; ".join(thin))
    for f in summary["failed_runs"]:
        lines.append(f"\nseed {f['seed']} (threads {f['threads']}) failed: {headline(f['error'])}")
    return "\n".join(lines)


def _room(c: dict) -> str:
    """The last column of the summary table: why a check is safe, or that it is not."""
    if c.get("thin"):
        return "THIN"
    if c.get("committed"):
        return "constant (committed full run)"
    return "constant (no spread)" if not c["value_sd"] else "ok"


def write_record(notebook: Path, runs: list[Run], summary: dict, wall_s: float, allow_dirty: bool) -> Path:
    """Store the sweep as ``results/<chapter>/seeds.json`` with provenance (refuses a dirty tree)."""
    from lib.results import git_commit, provenance

    root = repo_root(notebook)
    commit = git_commit()
    if commit.endswith("-dirty") and not allow_dirty:
        raise SystemExit("refusing to write seeds.json from a tree with uncommitted changes "
                         "(commit first, or pass --allow-dirty for a record marked -dirty)")
    chapters = {r.chapter for r in runs if r.chapter}
    if len(chapters) != 1:
        raise SystemExit(f"cannot tell the chapter key of {notebook.name} (its runs reported {chapters})")
    chapter = chapters.pop()
    record = {
        "chapter": chapter,
        "notebook": str(notebook.resolve().relative_to(root)),
        "summary": summary,
        "runs": [{"seed": r.seed, "threads": r.threads, "passed": r.passed, "wall_s": round(r.wall_s, 1),
                  "error": r.error, "checks": {c["check"]: c["value"] for c in r.checks}} for r in runs],
        "provenance": provenance(sorted({r.seed for r in runs}), wall_s, scale="quick"),
    }
    record["provenance"]["threads"] = sorted({r.threads for r in runs})
    path = root / "results" / chapter / "seeds.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--seeds", default="0-19", help="REPRO_SEED values run on --threads (default 0-19)")
    parser.add_argument("--threads", type=int, default=1, help="thread count of the main runs (default 1)")
    parser.add_argument("--alt-seeds", default="0-4", help="seeds run again on --alt-threads (default 0-4; '' skips)")
    parser.add_argument("--alt-threads", type=int, default=2, help="thread count of those runs (default 2)")
    parser.add_argument("--jobs", type=int, default=2, help="cores to use (one-thread runs go this many at once)")
    parser.add_argument("--cell-timeout", type=int, default=600,
                        help="seconds a cell may run before the run fails (default 600: two-thread runs on a busy "
                             "2-core machine ran single cells for over 300 s)")
    parser.add_argument("--write", action="store_true", help="store results/<chapter>/seeds.json")
    parser.add_argument("--allow-dirty", action="store_true", help="with --write: accept uncommitted changes")
    args = parser.parse_args(argv)
    seeds, alt = parse_seeds(args.seeds), parse_seeds(args.alt_seeds)
    if not seeds and not alt:
        parser.error("no seeds to run")
    all_pass = True
    for nb in args.notebooks:
        start = time.perf_counter()
        runs = sweep(nb, seeds, args.threads, alt, args.alt_threads, args.jobs, args.cell_timeout,
                     progress=lambda msg: print(msg, flush=True))
        summary = summarise(runs)
        print("\n" + format_summary(nb, summary) + "\n", flush=True)
        all_pass &= summary["passes"] == summary["runs"] and not any(c["thin"] for c in summary["checks"].values())
        if args.write:
            print(f"wrote {write_record(nb, runs, summary, time.perf_counter() - start, args.allow_dirty)}")
    return 0 if all_pass else 1  # a failed run or a thin check


if __name__ == "__main__":
    sys.exit(main())
