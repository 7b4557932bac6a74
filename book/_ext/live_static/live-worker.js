// The live calculators' Python (started by live-start.js as the page opens): Pyodide and the
// course's wheels, loaded in this Web Worker so the page never waits on Python. Messages:
//   {id, argv}     -> {id, status, stdout, stderr, json}: `lab-utils ARGV` run once, its text
//                     and its --json answer from that one run (live_answer.py's answer)
//   {id, config}   -> {id, path}: the reader's config.json written where --model finds it
// `json` is the command's --json answer (what the figures are drawn from) when it has one.
// Python starts from the memory kept when the website was built (live_snapshot.py: the course
// imported, its catalogs read, the form's first commands answered), or afresh where the build
// kept none or this browser cannot restore it; restored, it writes the wheels' files (modules not
// yet imported, the catalogs) once its first answer is sent, and keeps the memory unzipped.
// Python is only ever called with strings in and out: no JavaScript object holds a Python one,
// which is what a restored memory needs.
const staticUrl = new URL("./", import.meta.url);  // started from a blob (live-start.js): not self.location
// Marks on this worker's clock (performance.now(); its origin, originMs, is when it started):
// each step of the first load, for scripts/bench_live_calculators.py.
const timings = { startedMs: performance.now(), originMs: performance.timeOrigin };
const UNZIPPED = "live-python-memory";  // the kept memory unzipped (a cache apart from the service worker's)
const afterFirstAnswer = [];  // what waits until the first answer is sent (then done before the next question)
let filesWritten = false;  // the wheels' files (a restored Python answers its first question without them)

// A file of packages.json, fetched with its pinned hash as Subresource Integrity.
function fetchPinned(manifest, path) {
  const integrity = (manifest.integrity || {})[path];
  return fetch(new URL(path, staticUrl), integrity ? { integrity } : {});
}

// Python's kept memory: unzipped (when its bytes are gzip's), its runs put back into zeros.
// Unzipping takes a slow phone most of a second, so it is also kept unzipped in Cache Storage
// (after the first answer) under its pinned hash, and a later visit reads that. Rejects when it
// cannot be had: the worker then starts Python afresh.
async function keptMemory(manifest) {
  const hash = encodeURIComponent(manifest.integrity[manifest.snapshot]);
  const key = new URL(`${manifest.snapshot}?${hash}`, staticUrl).href;
  const earlier = await unzippedEarlier(key);
  if (earlier) {
    timings.snapshotMs = performance.now();
    timings.unzippedEarlier = true;
    return wholeMemory(earlier);
  }
  const response = await fetchPinned(manifest, manifest.snapshot);
  if (!response.ok) throw new Error(`${manifest.snapshot}: HTTP ${response.status}`);
  let data = new Uint8Array(await response.arrayBuffer());
  timings.snapshotMs = performance.now();
  if (data[0] === 0x1f && data[1] === 0x8b) {
    const unzipped = new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"));
    data = new Uint8Array(await new Response(unzipped).arrayBuffer());
    timings.unzippedMs = performance.now();
  }
  afterFirstAnswer.push(() => keepUnzipped(key, data).catch((error) => { timings.keptUnzipped = String(error); }));
  return wholeMemory(data);
}

async function unzippedEarlier(key) {
  try {
    const response = await (await caches.open(UNZIPPED)).match(key);
    return response ? new Uint8Array(await response.arrayBuffer()) : null;
  } catch (error) {
    return null;  // no Cache Storage here (a private window, an insecure origin)
  }
}

async function keepUnzipped(key, data) {
  const cache = await caches.open(UNZIPPED);
  for (const old of await cache.keys()) await cache.delete(old);  // an earlier build's
  await cache.put(key, new Response(data, { headers: { "Content-Type": "application/octet-stream" } }));
  timings.keptUnzipped = data.length;
}

// live_snapshot.sparse's format read back: the memory's length, the number of runs, each run's
// offset and length (little-endian uint32s), the runs' bytes; the rest of the memory is zeros.
function wholeMemory(data) {
  const header = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const memory = new Uint8Array(header.getUint32(0, true));
  const runs = header.getUint32(4, true);
  let at = 8 + 8 * runs;
  for (let i = 0; i < runs; i++) {
    const offset = header.getUint32(8 + 8 * i, true), length = header.getUint32(12 + 8 * i, true);
    memory.set(data.subarray(at, at + length), offset);
    at += length;
  }
  if (at !== data.length) throw new Error(`the kept memory's runs end at ${at}, not ${data.length}`);
  return memory;
}

async function load() {
  const digest = new URL(import.meta.url).searchParams.get("packages");  // live-start.js's address
  const manifest = await (await fetch(new URL(`live/packages.json?digest=${digest}`, staticUrl))).json();
  timings.manifestMs = performance.now();
  const pyodideUrl = new URL(manifest.pyodide, staticUrl);
  // Pyodide's scripts, the wheels and the kept memory fetched at once; Pyodide itself starts
  // (its runtime's script, the runtime's fetch) while the memory still arrives: loadPyodide
  // waits for it only when it sizes the runtime's memory.
  const memory = manifest.snapshot ? keptMemory(manifest) : null;
  if (memory) memory.catch(() => {});  // its failure is seen where loadPyodide awaits it
  const [{ loadPyodide }, wheels] = await Promise.all([
    import(pyodideUrl.href).then((module) => { timings.importedMs = performance.now(); return module; }),
    Promise.all(manifest.wheels.map(async (wheel) => (await fetchPinned(manifest, "live/" + wheel)).arrayBuffer())),
  ]);
  const options = { indexURL: pyodideUrl.href.replace(/[^/]*$/, ""), fullStdLib: false };
  let pyodide = null;
  if (memory) {
    try {
      pyodide = await loadPyodide({ ...options, _loadSnapshot: memory });
      timings.restored = true;
    } catch (error) {  // no memory to be had, or one this browser cannot take: start afresh
      timings.restoreError = String(error);
    }
  }
  if (!pyodide) pyodide = await loadPyodide(options);
  timings.pyodideMs = performance.now();
  const writeFiles = () => {  // the wheels' files: modules imported later, catalogs
    for (const data of wheels) pyodide.unpackArchive(data, "wheel");
    filesWritten = true;
    timings.unpackedMs = performance.now();
  };
  if (timings.restored) {
    // The kept memory holds the course imported and its catalogs read: a first answer needs no
    // file, so they are written once it is sent (see the message handler).
    afterFirstAnswer.unshift(writeFiles);
  } else {
    writeFiles();
    pyodide.runPython(manifest.setup);
  }
  timings.readyMs = performance.now();
  const files = performance.getEntriesByType("resource");
  timings.bodyBytes = files.reduce((sum, r) => sum + (r.encodedBodySize || 0), 0);
  // the files the page's service worker answered (each kept in its cache as it arrived)
  timings.viaServiceWorker = files.filter((r) => r.workerStart > 0).map((r) => r.name.split("/").pop());
  return pyodide;
}

const ready = load();
ready.then(
  () => self.postMessage({ ready: true, timings }),
  (error) => self.postMessage({ ready: false, error: String(error) }),
);

function doAfterFirstAnswer() {
  for (const job of afterFirstAnswer.splice(0)) job();
}

function call(pyodide, name, text) {
  pyodide.globals.set("_text", text);  // a str in Python: nothing of Python's held in JavaScript
  return pyodide.runPython(`${name}(_text)`);
}

self.addEventListener("message", async (event) => {
  const { id, argv, config } = event.data;
  try {
    const pyodide = await ready;
    if (config !== undefined) {
      self.postMessage({ id, path: call(pyodide, "write_config", config) });
      return;
    }
    const started = performance.now();
    const ask = () => JSON.parse(call(pyodide, "answer", JSON.stringify(argv)));
    const withoutFiles = !filesWritten;
    let answer = null;
    try {
      answer = ask();
    } catch (error) {
      if (!withoutFiles) throw error;
    }
    if (withoutFiles && (answer === null || answer.status !== 0)) {  // perhaps a file it needs: asked again with them
      doAfterFirstAnswer();
      answer = ask();
    }
    self.postMessage({ id, ...answer, ms: performance.now() - started });
    doAfterFirstAnswer();
  } catch (error) {
    self.postMessage({ id, error: String(error) });
  }
});
