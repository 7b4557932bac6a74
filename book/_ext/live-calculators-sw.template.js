// The live calculators' service worker (written by book/_ext/live_calculators.py at the site's
// root, its scope the calculators page; live-start.js registers it on a first visit before
// Python starts). It keeps, in a cache named by their hashes:
// - Pyodide, the course's wheels and Python's memory kept at build time, fetched once with
//   their SHA-256 as Subresource Integrity (as the page first asks for them, or after its first
//   answer for any it fetched before this worker controlled it) and then always answered from
//   the cache (a new build with other files has another cache). The code among them is answered
//   from the cache's copy even when just fetched: the browser keeps a WebAssembly module's
//   compiled code beside that copy, so a second visit does not compile Python's runtime again;
// - the page and whatever it loaded (the page sends the list): a file named by its digest from
//   the cache once kept, the others from the network when there is one, else from the cache:
//   the page works offline after its first visit.
const CACHE = "live-calculators-__VERSION__";
const PINNED = __PINNED__;  // _static-relative path -> sha256
const STATIC = new URL("_static/", self.location).href;
const pinned = new Map(Object.entries(PINNED).map(([path, hash]) => [STATIC + path, hash]));

// A pinned file from the network (rejects when it cannot be had or its hash is not the pinned one).
async function fetchPinned(url) {
  const response = await fetch(new Request(url, { integrity: pinned.get(url), cache: "no-cache" }));
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

// A pinned file, from the cache once kept. Code (the runtime's WebAssembly, Pyodide's scripts) is
// answered from the cache's copy even when just fetched: the browser keeps its compiled code
// beside that copy; the other files are answered as they arrive and kept meanwhile.
async function pinnedFile(event, cache, url) {
  const kept = await cache.match(url);
  if (kept) return kept;
  const response = await fetchPinned(url);
  if (!/\.(wasm|m?js)$/.test(url)) {
    event.waitUntil(cache.put(url, response.clone()));
    return response;
  }
  await cache.put(url, response);
  return cache.match(url);
}

self.addEventListener("install", (event) => event.waitUntil(self.skipWaiting()));

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith("live-calculators-") && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// Sent by the page once its first answers are shown: its own files (its HTML, style, scripts)
// and any pinned file not yet kept, for offline visits.
self.addEventListener("message", (event) => {
  if (!event.data || !Array.isArray(event.data.keep)) return;
  const sameOrigin = event.data.keep.filter((url) => new URL(url).origin === self.location.origin);
  event.waitUntil(caches.open(CACHE).then(async (cache) => {
    for (const url of pinned.keys()) {
      if (await cache.match(url)) continue;
      try {
        await cache.put(url, await fetchPinned(url));
      } catch (error) { /* offline already: kept on a later visit */ }
    }
    await Promise.all(sameOrigin.map(async (url) => {
      if (pinned.has(url) || (await cache.match(url))) return;
      try {
        const response = await fetch(url);
        if (response.ok) await cache.put(url, response);
      } catch (error) { /* offline already: nothing to keep */ }
    }));
  }));
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || new URL(request.url).origin !== self.location.origin) return;
  const url = request.url.split("#")[0];
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    if (pinned.has(url)) return pinnedFile(event, cache, url);
    // A file named by its content's digest (Sphinx's ?v= and the theme's ?digest=: another
    // content, another address) from the cache once kept; the others from the network first
    if (/[?&](v|digest)=/.test(url)) {
      const kept = await cache.match(url);
      if (kept) return kept;
    }
    try {
      const response = await fetch(request);
      if (response.ok) event.waitUntil(cache.put(url, response.clone()));  // kept while it is answered
      return response;
    } catch (offline) {
      const kept = await cache.match(url, { ignoreSearch: true });
      if (kept) return kept;
      throw offline;
    }
  })());
});
