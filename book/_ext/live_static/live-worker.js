// The live calculators' Python (started by live-calculators.js as the page opens): Pyodide and
// the course's wheels, loaded in this Web Worker so the page never waits on Python. Messages:
//   {id, argv}            -> {id, status, stdout, stderr, json}: `lab-utils ARGV` run once,
//                            its text and its --json answer from that one run (cli.main's json_answer)
//   {id, config}          -> {id, path}: the reader's config.json written where --model finds it
//   {id, keep: true}      -> {id, kept}: Python's memory, the course imported and its catalogs
//                            read, kept in the browser's cache (a later visit starts from it)
// `json` is the command's --json answer (what the figures are drawn from) when it has one.
// Python is only ever called through runPython with strings in and out: no JavaScript object
// holds a Python one, so its memory can be kept whole (Pyodide's memory snapshot) and restored.
const staticUrl = new URL("./", import.meta.url);  // started from a blob (live-calculators.js): not self.location
// Marks on this worker's clock (performance.now(); its origin, originMs, is when it started):
// each step of the first load, for scripts/bench_live_calculators.py.
const timings = { startedMs: performance.now(), originMs: performance.timeOrigin };
const SNAPSHOTS = "live-python-memory";  // a cache apart from the service worker's (it clears its own)

const SETUP = `
import contextlib, io, json, os
from lab_utils import cli

def _answer(argv_json):
    """lab-utils ARGV run once: its exit status, output, error output and --json answer."""
    out, err, answers = io.StringIO(), io.StringIO(), []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(json.loads(argv_json), json_answer=answers.append)
        except SystemExit as stop:
            status = stop.code
    answer = answers[0] if answers and status == 0 else None
    return json.dumps({"status": status, "stdout": out.getvalue(), "stderr": err.getvalue(), "json": answer})

def _write_config(text):
    """The reader's config.json in the working folder (none when text is empty)."""
    if text:
        with open("config.json", "w", encoding="utf-8") as file:
            file.write(text)
    elif os.path.exists("config.json"):
        os.remove("config.json")
    return "config.json"
`;

// The snapshot's address: named by the hashes of Pyodide's files and the wheels (another build,
// another snapshot), so a kept memory always holds the very code this page serves.
async function snapshotUrl(manifest) {
  const pinned = new TextEncoder().encode(JSON.stringify(manifest.integrity || manifest.wheels));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", pinned));
  return new URL(`live/python-memory-${[...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("")}`, staticUrl).href;
}

async function keptSnapshot(url) {
  try {
    const response = await (await caches.open(SNAPSHOTS)).match(url);
    return response ? new Uint8Array(await response.arrayBuffer()) : null;
  } catch (error) {
    return null;  // no Cache Storage here (an insecure origin, a private window): start afresh
  }
}

let keep = null;  // how to keep this Python's memory (null: restored from a snapshot, nothing to keep)

async function load() {
  const manifest = await (await fetch(new URL("live/packages.json", staticUrl))).json();
  timings.manifestMs = performance.now();
  const pyodideUrl = new URL(manifest.pyodide, staticUrl);
  const memoryUrl = await snapshotUrl(manifest);
  const [{ loadPyodide }, wheels, snapshot] = await Promise.all([
    import(pyodideUrl.href).then((module) => { timings.importedMs = performance.now(); return module; }),
    Promise.all(manifest.wheels.map(async (wheel) => {
      const path = "live/" + wheel;
      const integrity = (manifest.integrity || {})[path];
      const response = await fetch(new URL(path, staticUrl), integrity ? { integrity } : {});
      return response.arrayBuffer();
    })),
    keptSnapshot(memoryUrl),
  ]);
  const options = { indexURL: pyodideUrl.href.replace(/[^/]*$/, ""), fullStdLib: false };
  let pyodide = null;
  if (snapshot) {
    try {
      pyodide = await loadPyodide({ ...options, _loadSnapshot: snapshot });
      timings.restored = true;
    } catch (error) {  // a snapshot this Pyodide cannot take: forget it, start afresh
      timings.restoreError = String(error);
      await caches.delete(SNAPSHOTS);
    }
  }
  if (!pyodide) pyodide = await loadPyodide({ ...options, _makeSnapshot: true });
  timings.pyodideMs = performance.now();
  for (const data of wheels) pyodide.unpackArchive(data, "wheel");  // the files: modules imported later, catalogs
  timings.unpackedMs = performance.now();
  if (!timings.restored) {
    pyodide.runPython(SETUP);
    keep = async () => {
      const memory = pyodide.makeMemorySnapshot();
      const cache = await caches.open(SNAPSHOTS);
      for (const old of await cache.keys()) await cache.delete(old);
      await cache.put(memoryUrl, new Response(memory, { headers: { "Content-Type": "application/octet-stream" } }));
      return memory.length;
    };
  }
  timings.readyMs = performance.now();
  timings.bodyBytes = performance.getEntriesByType("resource").reduce((sum, r) => sum + (r.encodedBodySize || 0), 0);
  return pyodide;
}

const ready = load();
ready.then(
  () => self.postMessage({ ready: true, timings }),
  (error) => self.postMessage({ ready: false, error: String(error) }),
);

function call(pyodide, name, text) {
  pyodide.globals.set("_text", text);  // a str in Python: nothing of Python's held in JavaScript
  return pyodide.runPython(`${name}(_text)`);
}

self.addEventListener("message", async (event) => {
  const { id, argv, config } = event.data;
  try {
    const pyodide = await ready;
    if (event.data.keep) {
      const taken = keep;
      keep = null;
      self.postMessage({ id, kept: taken ? await taken().catch((error) => "not kept: " + error) : false });
      return;
    }
    if (config !== undefined) {
      self.postMessage({ id, path: call(pyodide, "_write_config", config) });
      return;
    }
    const started = performance.now();
    const answer = JSON.parse(call(pyodide, "_answer", JSON.stringify(argv)));
    self.postMessage({ id, ...answer, ms: performance.now() - started });
  } catch (error) {
    self.postMessage({ id, error: String(error) });
  }
});
