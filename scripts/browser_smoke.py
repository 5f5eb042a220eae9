"""Real-browser smoke test of the built book (run by .ci/run after the build).

Serves ``_build/html`` on 127.0.0.1, opens the index and the chapter pages in headless Chromium
(Debian's /usr/bin/chromium, driven by Playwright) and fails on: console errors, page errors, failed
or non-local requests (the book must render offline, without CDNs), images that did not load,
math that MathJax did not render, and static widgets that did not render. Saves a screenshot of
each page under ``_build/screenshots/``.

    python scripts/browser_smoke.py [--pages intro.html chapters/00_how_to_read.html]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


PAGE_CHECKS_JS = """() => {
  const imgs = [...document.images];
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);
  const rawMath = [...document.querySelectorAll('span.math, div.math')]
      .filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80));
  return {images: imgs.length, broken, rawMath,
          rendered: document.querySelectorAll('mjx-container').length,
          widgetStates: document.querySelectorAll('script[type="application/vnd.jupyter.widget-state+json"]').length,
          widgets: document.querySelectorAll('.jupyter-widgets').length};
}"""


def check_page(browser, base: str, page_path: str) -> list[str]:
    """Open one page and return the list of problems found (empty when it is fine)."""
    problems: list[str] = []
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))

    def on_request(request):
        host = urlparse(request.url).hostname
        if request.url.startswith(("http:", "https:")) and host != "127.0.0.1":
            problems.append(f"non-local request (the book must not need a CDN): {request.url}")
    page.on("request", on_request)
    page.goto(f"{base}/{page_path}", wait_until="load")
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !window.MathJax || !window.MathJax.startup || "
                           "window.MathJax.startup.promise.then(() => true)", timeout=30000)
    page.wait_for_timeout(1500)  # let the widget manager render
    info = page.evaluate(PAGE_CHECKS_JS)
    problems += [f"image did not load: {src}" for src in info["broken"]]
    problems += [f"math not rendered: {text!r}" for text in info["rawMath"]]
    if info["widgetStates"] and not info["widgets"]:
        problems.append("the page carries widget state but no widget was rendered")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / (page_path.replace("/", "_").replace(".html", ".png"))
    page.screenshot(path=str(shot), full_page=False)
    print(f"{page_path}: {info['images']} images, {info['rendered']} formulas rendered, "
          f"{info['widgets']} widgets rendered, {len(problems)} problems; screenshot {shot.relative_to(ROOT)}")
    page.close()
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", nargs="*", default=None,
                        help="pages relative to _build/html (default: intro.html and every chapter)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not (HTML / "intro.html").exists():
        print(f"no built book at {HTML}: run scripts/build_book.sh first", file=sys.stderr)
        return 2
    pages = args.pages or ["intro.html"] + sorted(
        str(p.relative_to(HTML)) for p in (HTML / "chapters").glob("*.html"))
    from playwright.sync_api import sync_playwright

    server, base = serve()
    failures = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            for page_path in pages:
                problems = check_page(browser, base, page_path)
                if problems:
                    failures[page_path] = problems
            browser.close()
    finally:
        server.shutdown()
    for page_path, problems in failures.items():
        print(f"FAIL {page_path}:", *[f"  - {p}" for p in problems[:20]], sep="\n")
    print(f"browser smoke test: {len(failures)} of {len(pages)} pages with problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
