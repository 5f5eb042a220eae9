"""Mutation testing of one ``lib`` module, and the committed record of every module's score.

    bash scripts/mutation.sh lib/distill.py     # run mutmut on lib/distill.py, update results/mutation.json
    python scripts/mutation.py --check           # which records are missing or stale (CI prints this)
    python scripts/mutation.py --judge NAME "why it is equivalent"   # record a survivor as equivalent
    python scripts/mutation.py --gpu-only NAME "what a GPU run would show"   # a survivor only a GPU can tell apart

A mutant is a one-token change of the module (``<`` for ``<=``, ``1`` for ``0``, a dropped argument...);
the module's unit tests *kill* it when one of them fails. ``results/mutation.json`` keeps, per module,
the module's sha256, the counts, the score and the mutmut version and git commit of the run, and the
surviving mutants judged *equivalent* (they cannot change any result: e.g. ``"QUICK".lower()`` for
``"quick"``), each with its reason. A mutant that makes its tests run past mutmut's CPU-time limit (an endless
loop, or a training loop that no longer converges) counts as detected, like a killed one; the record
keeps the two counts apart (``killed``, ``timeouts``). mutmut 3.8 also stops a mutant at half that limit
in wall-clock seconds, so a timeout can also be a process that waits: ``tests/conftest.py`` removes the
one such wait found (tqdm's cross-process lock), and a module whose run shows many timeouts deserves a
look at its hung processes before its score is believed. An entry made by hand from a run that was not one
plain ``mutmut run`` (resumed on its unchecked mutants, or an earlier run's survivors re-run against
tests that only grew) says how in its ``note``; a re-run of the module replaces it. A re-run keeps
the ones whose mutant still survives and drops (and prints) the rest, since mutant numbers shift when
the module changes. The score is detected / (mutants - equivalent); the bar is 90 % (README, "Tests
that bite"). Mutmut's configuration is in pyproject.toml (``[tool.mutmut]``): only the unit tests judge.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as `python scripts/mutation.py`: the book's lib must be importable
from lib.results import git_commit  # noqa: E402  (the commit, '-dirty' if tracked code changed)
RECORD = ROOT / "results" / "mutation.json"
BAR = 0.90
#: The modules issue 16 asks to be at the bar (chapter algorithms and the core), the newer chapter
#: modules, which meet it when they land (README, "Writing a chapter"), and the modules the book's evidence
#: rests on (issue 37: argument checks, the claims' check helper, seed sweeps, downloads, coverage tables).
REQUIRED = ["boolean", "boolean_families", "distill", "equivalence", "mae", "maxmargin", "multiexit",
            "pruning", "nets", "train", "scale", "results", "annulus", "annulus_training", "linear_regions",
            "teacher_student", "teacher_student_conv",
            "landscape", "skip_connections", "decision_regions", "image_nets", "network_comparison",
            "validate", "checks", "sweep", "data", "leaky_1d", "coverage"]
#: mutmut's words for a mutant's fate, and the key each is counted under.
STATUS_KEYS = {"killed": "killed", "survived": "survived", "timeout": "timeouts", "suspicious": "suspicious",
               "no tests": "no_tests", "skipped": "skipped", "not checked": "not_checked",
               "segfault": "killed", "caught by type check": "killed"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_name(path: str) -> str:
    """``lib/distill.py`` -> ``distill``; anything else is refused with the reason."""
    m = re.fullmatch(r"(?:\./)?lib/([a-z_][a-z0-9_]*)\.py", path)
    if not m or not (ROOT / path).is_file():
        raise ValueError(f"expected a module file lib/<name>.py of this repository, got {path!r}")
    return m.group(1)


def parse_results(text: str, module: str) -> dict[str, str]:
    """Mutant name -> status, for ``module``'s mutants, from ``mutmut results --all true``."""
    statuses = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\s*(lib\.(\w+)\.\S+): (.+?)\s*", line)
        if m and m.group(2) == module:
            if m.group(3) not in STATUS_KEYS:
                raise ValueError(f"unknown mutmut status {m.group(3)!r} in line {line!r}")
            statuses[m.group(1)] = m.group(3)
    return statuses


def summarise(statuses: dict[str, str], equivalent: dict[str, str]) -> dict:
    """Counts and score of one module's run. ``equivalent`` (mutant -> reason) is kept only for mutants
    that survived; the score is (killed + timeouts) / (mutants - equivalent)."""
    counts = {key: 0 for key in dict.fromkeys(STATUS_KEYS.values())}
    for status in statuses.values():
        counts[STATUS_KEYS[status]] += 1
    if counts["not_checked"]:
        raise ValueError(f"{counts['not_checked']} mutants were not checked: the run did not finish")
    kept = {name: why for name, why in equivalent.items() if statuses.get(name) == "survived"}
    entry = {"mutants": len(statuses), **counts, "equivalent": kept}
    return entry | {"score": _score(entry)}


def _score(entry: dict) -> float:
    """(killed + timeouts) / (mutants - equivalent), rounded to 4 digits; 1.0 when nothing is left to judge."""
    judged = entry["mutants"] - len(entry["equivalent"])
    return round((entry["killed"] + entry["timeouts"]) / judged, 4) if judged else 1.0


def load_record(path: Path = RECORD) -> dict:
    """Module name -> entry. On disk the entries sit under ``"modules"``, keyed by path (``lib/x.py``),
    the layout the workplace's tools read."""
    if not path.exists():
        return {}
    return {re.fullmatch(r"lib/(\w+)\.py", key).group(1): entry
            for key, entry in json.loads(path.read_text())["modules"].items()}


def save_record(record: dict, path: Path = RECORD) -> None:
    """Write ``record`` (module name -> entry) in the on-disk layout of :func:`load_record`."""
    modules = {f"lib/{name}.py": record[name] for name in sorted(record)}
    path.write_text(json.dumps({"modules": modules}, indent=1) + "\n")


def stale_modules(record: dict, required=REQUIRED) -> list[str]:
    """One line per required module whose record is missing, stale (the module changed since its run)
    or below the bar."""
    lines = []
    for name in required:
        entry, path = record.get(name), ROOT / "lib" / f"{name}.py"
        if not path.exists():
            continue  # a chapter module that has not landed yet
        if entry is None:
            lines.append(f"lib/{name}.py: no mutation record")
        elif entry["sha256"] != sha256(path):
            lines.append(f"lib/{name}.py: record stale (module changed since the run at {entry['git_commit'][:8]})")
        elif entry["git_commit"].endswith("-dirty"):
            lines.append(f"lib/{name}.py: record made from uncommitted code ({entry['git_commit'][:8]}-dirty)")
        elif entry["score"] < BAR:
            lines.append(f"lib/{name}.py: score {entry['score']:.1%} is below {BAR:.0%}")
    return lines


def judge(record: dict, mutant: str, reason: str) -> dict:
    """Move a surviving mutant of ``record`` to the module's equivalent ones, with ``reason``, and
    recompute the score. Only a survivor of the latest run can be judged."""
    module = mutant.split(".")[1] if mutant.startswith("lib.") else None
    entry = record.get(module)
    if entry is None or mutant not in entry["surviving"]:
        raise ValueError(f"{mutant!r} is not a surviving mutant of a recorded module")
    if mutant in entry.get("gpu_only", {}):
        raise ValueError(f"{mutant!r} is recorded as GPU-only: a GPU run can tell it apart, so it is not equivalent")
    if not reason.strip():
        raise ValueError("say why the mutant is equivalent")
    entry["surviving"].remove(mutant)
    entry["equivalent"][mutant] = reason.strip()
    entry["score"] = _score(entry)
    return record


def mark_gpu_only(record: dict, mutant: str, reason: str) -> dict:
    """Record that a mutant only a GPU run could tell apart (a device argument dropped, a CUDA generator
    not forked...) is such a one (issue 37): it stays surviving, counted against the score, and is listed
    apart under the module's ``gpu_only`` with ``reason``; a mutant judged equivalent before moves back."""
    module = mutant.split(".")[1] if mutant.startswith("lib.") else None
    entry = record.get(module)
    if entry is None or (mutant not in entry["surviving"] and mutant not in entry["equivalent"]):
        raise ValueError(f"{mutant!r} is not a surviving mutant of a recorded module")
    if not reason.strip():
        raise ValueError("say what only a GPU run would show")
    if entry["equivalent"].pop(mutant, None) is not None:
        entry["surviving"] = sorted(entry["surviving"] + [mutant])
    entry.setdefault("gpu_only", {})[mutant] = reason.strip()
    entry["score"] = _score(entry)
    return record


def run_module(path: str, max_children: int) -> dict:
    """Run mutmut on one module and return its new record entry (the old equivalent judgements kept)."""
    module = module_name(path)
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), f"lib.{module}.*"]
    run = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode:  # e.g. "failed to collect stats": a unit test fails on the unmutated code
        tail = "\n".join(line for line in run.stdout.splitlines() if "FAILED" in line or "failed" in line)
        raise RuntimeError(f"mutmut exited with status {run.returncode}:\n{tail or run.stdout[-3000:]}")
    text = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    statuses = parse_results(text, module)
    if not statuses:
        raise RuntimeError(f"mutmut reported no mutants of {path}")
    previous = load_record().get(module, {})
    old = previous.get("equivalent", {})  # disjoint from gpu_only: mark_gpu_only moves a mutant out of it
    entry = summarise(statuses, old)
    gpu_only = {name: why for name, why in previous.get("gpu_only", {}).items() if statuses.get(name) == "survived"}
    if gpu_only:
        entry["gpu_only"] = gpu_only
    for name in sorted(set(old) - set(entry["equivalent"])):
        print(f"dropped equivalent judgement of {name} (status now {statuses.get(name, 'gone')})")
    from importlib.metadata import version

    entry |= {"sha256": sha256(ROOT / path), "mutmut": version("mutmut"), "git_commit": git_commit(ROOT),
              "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
              "surviving": sorted(n for n, s in statuses.items() if s == "survived" and n not in entry["equivalent"])}
    return entry


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", nargs="?", help="lib/<name>.py to mutate")
    parser.add_argument("--check", action="store_true", help="report missing, stale or low records and exit 0")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (cores)")
    parser.add_argument("--judge", nargs=2, metavar=("MUTANT", "REASON"), help="record a survivor as equivalent")
    parser.add_argument("--gpu-only", nargs=2, metavar=("MUTANT", "REASON"),
                        help="record a survivor that only a GPU run could tell apart (it stays surviving)")
    args = parser.parse_args(argv)
    if args.gpu_only:
        record = mark_gpu_only(load_record(), *args.gpu_only)
        save_record(record)
        print(f"{args.gpu_only[0]} recorded as GPU-only (surviving); score "
              f"{record[args.gpu_only[0].split('.')[1]]['score']:.1%}")
        return 0
    if args.judge:
        record = judge(load_record(), *args.judge)
        save_record(record)
        print(f"{args.judge[0]} judged equivalent; score now {record[args.judge[0].split('.')[1]]['score']:.1%}")
        return 0
    if args.check:
        lines = stale_modules(load_record())
        print("\n".join(f"WARNING mutation record: {line}" for line in lines) or "mutation records: all current")
        return 0
    if not args.module:
        parser.error("name a module (lib/<name>.py) or pass --check")
    entry = run_module(args.module, args.max_children)
    record = load_record()
    record[module_name(args.module)] = entry
    save_record(record)
    print(f"{args.module}: {entry['killed']} of {entry['mutants']} killed, {len(entry['equivalent'])} judged "
          f"equivalent, score {entry['score']:.1%} (bar {BAR:.0%}); {len(entry['surviving'])} survivors to judge or kill"
          f" (mutmut show NAME)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
