// Loaded before RequireJS and the Jupyter widgets HTML manager. Their files lie in _static/ (see
// scripts/fetch_static.sh); without this the manager resolves its own module, and so its font files,
// under a CDN-style path relative to the page ("@jupyter-widgets/html-manager/dist/...") and 404s.
(function () {
  var dir = new URL("html-manager", document.currentScript.src).href;
  window.__jupyter_widgets_assets_path__ = dir + "/";
  window.require = { paths: { "@jupyter-widgets/html-manager/dist": dir } };  // RequireJS reads this on load
})();

// The widgets' labels are typeset through MathJax 2's MathJax.Hub.Queue; the book uses MathJax 3.
// Give MathJax 3 that entry point once it has loaded (deferred scripts run before DOMContentLoaded,
// and this listener is registered before the widget manager's).
document.addEventListener("DOMContentLoaded", function () {
  if (window.MathJax && !window.MathJax.Hub && window.MathJax.typesetPromise) {
    window.MathJax.Hub = { Queue: function () { window.MathJax.typesetPromise(); } };
  }
});
