"""Small Sphinx extension for the book's HTML (registered in _config.yml under local_extensions).

* Drop duplicate ``<script>`` entries: sphinx-thebe registers its inline configuration script twice
  under jupyter-book 1.x, and the second copy fails in the browser with "Identifier 'THEBE_JS_URL'
  has already been declared".
* Tell the Jupyter widgets HTML manager where its font files are (next to it in ``_static``) before it
  loads; by default it looks for them under a CDN-style path relative to the page, which 404s offline.
* The ``coverage-summary`` directive (used by ``intro.md``): the per-chapter counts of the chapters'
  Coverage tables, read from the notebooks at build time (:func:`lib.coverage.summary_markdown`).
"""

from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

STATIC = Path(__file__).parent / "static"
BOOK = Path(__file__).resolve().parent.parent


class CoverageSummary(SphinxDirective):
    """Render the table of verdict counts per chapter, computed from ``chapters/*.ipynb``; the page is
    rebuilt whenever a notebook changes, so its numbers are never typed and never stale."""

    def run(self):
        from lib.coverage import summary_markdown

        chapters = BOOK / "chapters"
        for nb in sorted(chapters.glob("*.ipynb")):
            self.env.note_dependency(str(nb))
        container = nodes.container(classes=["coverage-summary"])
        container += self.parse_text_to_nodes(summary_markdown(chapters))
        return [container]


def _script_key(script):
    # Inline scripts are registered with filename None by one path and "" by the other: same script.
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def add_static_path(app, config):
    config.html_static_path.append(str(STATIC))


def setup(app):
    app.add_directive("coverage-summary", CoverageSummary)
    app.connect("config-inited", add_static_path)
    app.add_js_file("widgets-assets-path.js", priority=100)
    app.connect("html-page-context", dedupe_scripts, priority=100)  # early: the event stops at the first handler returning a template
    return {"parallel_read_safe": True, "parallel_write_safe": True}
