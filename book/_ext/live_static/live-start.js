// The live calculators' Python, started as early as the page can: this script is written inline
// at the top of the page's <head>, before its stylesheets (book/_ext/live_calculators.py), so the
// Web Worker (live-worker.js) begins fetching and compiling Pyodide while the rest of the page is
// still fetched, parsed and styled.
// live-calculators.js (deferred) takes the worker (a promise) and its `ready` promise from
// window.liveCalculatorsStart. Started from a blob that imports live-worker.js: a blob worker's
// requests go through the page's service worker (a worker at its own address would need a scope
// of its own), so the cached Python answers offline.
// On a first visit the service worker is registered before the worker starts, so that Pyodide,
// the wheels and the kept memory come through it: it keeps each file as it arrives (nothing is
// downloaded twice), and the browser keeps the runtime's compiled code beside the cache's copy,
// where a second visit finds it instead of compiling again. A later visit's page is controlled
// from its start: the worker starts at once.
(() => {
  const root = new URL(document.documentElement.dataset.content_root || "./", document.baseURI);
  // the service worker, its scope the page itself (its script sits at the site's root); also
  // registered by live-calculators.js once the first answers are shown
  const page = location.href.split("#")[0].split("?")[0];
  const registerServiceWorker = () =>
    navigator.serviceWorker.register(new URL("live-calculators-sw.js", root), { scope: page });
  const CONTROL_WAIT_MS = 3000;  // a browser slower to start the service worker: Python waits no longer
  const controlled = new Promise((resolve) => {
    const container = navigator.serviceWorker;
    if (!container || container.controller) return resolve();
    container.addEventListener("controllerchange", resolve, { once: true });
    registerServiceWorker().catch(resolve);
    setTimeout(resolve, CONTROL_WAIT_MS);
  });
  // the worker's script and packages.json, each addressed by its content's digest (the build
  // writes them in: live_calculators.add_page_script), so the service worker answers them from
  // its cache on a later visit without asking the network
  const workerUrl = new URL("_static/live-worker.js?digest=__WORKER__&packages=__PACKAGES__", root);
  const packagesUrl = new URL(`_static/live/packages.json?digest=${workerUrl.searchParams.get("packages")}`, root);
  const source = `import ${JSON.stringify(workerUrl.href)};`;
  // startedMs: when the worker was made; startWorker: makes another (live-calculators.js, when
  // the page comes back from the browser's back-forward cache)
  const start = (window.liveCalculatorsStart = {
    startedMs: null, workerUrl, packagesUrl, page, registerServiceWorker, startWorker,
  });
  function startWorker() {
    const worker = controlled.then(() => {
      start.startedMs = performance.now();
      return new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })), { type: "module" });
    });
    const ready = worker.then((started) => new Promise((resolve, reject) => {
      started.addEventListener("message", (event) => {
        if (!("ready" in event.data)) return;
        if (event.data.ready) resolve(event.data.timings); else reject(new Error(event.data.error));
      });
      started.addEventListener("error", (event) => reject(new Error(event.message || "the worker failed")));
    }));
    Object.assign(start, { worker, ready });
  }
  startWorker();
})();
