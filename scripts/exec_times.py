"""Print the per-chapter execution times of the last book build as a Markdown table.

Reads what myst-nb recorded in the Sphinx environment of ``_build`` (the same numbers as the book's
"Execution statistics" page). Run after ``scripts/build_book.sh``. The book renders executions from its
jupyter-cache (method ``cache``): the time is that of the run that filled the cache, i.e. of
``tests/test_chapters.py`` when ``scripts/test.sh`` ran first in the same context (as in ``.ci/run``),
else of ``lib.run --book-cache`` in ``scripts/build_book.sh``.
"""

import pickle
import sys
from pathlib import Path

ENV = Path(__file__).resolve().parent.parent / "_build" / ".doctrees" / "environment.pickle"


def main() -> int:
    if not ENV.exists():
        print(f"no build environment at {ENV}: build the book first", file=sys.stderr)
        return 2
    with open(ENV, "rb") as fh:
        env = pickle.load(fh)
    rows = sorted((doc, data["exec_data"]) for doc, data in getattr(env, "nb_metadata", {}).items()
                  if data.get("exec_data"))
    print("| chapter | method | succeeded | execution time (s) |\n|---|---|---|---|")
    for doc, d in rows:
        print(f"| {doc} | {d.get('method')} | {d.get('succeeded')} | {d.get('runtime', float('nan')):.1f} |")
    print(f"| **total** | | | {sum(d.get('runtime') or 0 for _, d in rows):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
