// The live calculators' Python (started by live-start.js as the page opens): Pyodide and the
// course's wheels, loaded in this Web Worker so the page never waits on Python. Messages:
//   {id, argv}     -> {id, status, stdout, stderr, json}: `lab-utils ARGV` run once, its text
//                     and its --json answer from that one run (live_answer.py's answer)
//   {id, config}   -> {id, path}: the reader's config.json written where --model finds it
// `json` is the command's --json answer (what the figures are drawn from) when it has one.
// Python starts from the memory kept when the website was built (live_snapshot.py: the course
// imported, its catalogs read, the form's first commands answered), or afresh where the build
// kept none or this browser cannot restore it; restored, it writes the wheels' files (modules not
// yet imported, the catalogs) once its first answer is sent. Python is only ever called with
// strings in and out: no JavaScript object holds a Python one, which is what a restored memory needs.
const staticUrl = new URL("./", import.meta.url);  // started from a blob (live-start.js): not self.location
// Marks on this worker's clock (performance.now(); its origin, originMs, is when it started):
// each step of the first load, for scripts/bench_live_calculators.py.
const timings = { startedMs: performance.now(), originMs: performance.timeOrigin };

// A file of packages.json, fetched with its pinned hash as Subresource Integrity.
function fetchPinned(manifest, path) {
  const integrity = (manifest.integrity || {})[path];
  return fetch(new URL(path, staticUrl), integrity ? { integrity } : {});
}

// Python's kept memory, unzipped (a server that sent it with Content-Encoding: gzip has unzipped
// it already). Rejects when it cannot be had: the worker then starts Python afresh.
async function keptMemory(manifest) {
  const response = await fetchPinned(manifest, manifest.snapshot);
  if (!response.ok) throw new Error(`${manifest.snapshot}: HTTP ${response.status}`);
  const data = new Uint8Array(await response.arrayBuffer());
  timings.snapshotMs = performance.now();
  if (data[0] !== 0x1f || data[1] !== 0x8b) return data;
  const unzipped = new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(unzipped).arrayBuffer());
}

async function load() {
  const manifest = await (await fetch(new URL("live/packages.json", staticUrl))).json();
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
    timings.unpackedMs = performance.now();
  };
  if (timings.restored) {
    // The kept memory holds the course imported and its catalogs read: a first answer needs no
    // file, so they are written once it is sent (see the message handler).
    unwritten = writeFiles;
  } else {
    writeFiles();
    pyodide.runPython(manifest.setup);
  }
  timings.readyMs = performance.now();
  timings.bodyBytes = performance.getEntriesByType("resource").reduce((sum, r) => sum + (r.encodedBodySize || 0), 0);
  return pyodide;
}

let unwritten = null;  // writes the wheels' files, until they are written
const ready = load();
ready.then(
  () => self.postMessage({ ready: true, timings }),
  (error) => self.postMessage({ ready: false, error: String(error) }),
);

function writeUnwritten() {
  const write = unwritten;
  unwritten = null;
  write();
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
    let answer = null;
    try {
      answer = ask();
    } catch (error) {
      if (!unwritten) throw error;
    }
    if (unwritten && (answer === null || answer.status !== 0)) {  // perhaps a file it needs: asked again with them
      writeUnwritten();
      answer = ask();
    }
    self.postMessage({ id, ...answer, ms: performance.now() - started });
    if (unwritten) writeUnwritten();  // before the next question
  } catch (error) {
    self.postMessage({ id, error: String(error) });
  }
});
