// The live calculators' Python, started as early as the page can: this script is written inline
// at the top of the page's <head>, before its stylesheets (book/_ext/live_calculators.py), so the
// Web Worker (live-worker.js) begins fetching and compiling Pyodide while the rest of the page is
// still fetched, parsed and styled.
// live-calculators.js (deferred) takes the worker and its `ready` promise from
// window.liveCalculatorsStart. Started from a blob that imports live-worker.js: a blob worker's
// requests go through the page's service worker (a worker at its own address would need a scope
// of its own), so the cached Python answers offline.
(() => {
  const root = new URL(document.documentElement.dataset.content_root || "./", document.baseURI);
  const source = `import ${JSON.stringify(new URL("_static/live-worker.js", root).href)};`;
  const worker = new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })), { type: "module" });
  const ready = new Promise((resolve, reject) => {
    worker.addEventListener("message", (event) => {
      if (!("ready" in event.data)) return;
      if (event.data.ready) resolve(event.data.timings); else reject(new Error(event.data.error));
    });
    worker.addEventListener("error", (event) => reject(new Error(event.message || "the worker failed")));
  });
  window.liveCalculatorsStart = { worker, ready, startedMs: performance.now() };
})();
