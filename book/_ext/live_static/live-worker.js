// The live calculators' Python (started by live-calculators.js as the page opens): Pyodide and
// the course's wheels, loaded in this Web Worker so the page never waits on Python. Messages:
//   {id, argv}            -> {id, status, stdout, stderr, json}: `lab-utils ARGV` run once,
//                            its text and its --json answer from that one run (cli.main's json_answer)
//   {id, config}          -> {id, path}: the reader's config.json written where --model finds it
// `json` is the command's --json answer (what the figures are drawn from) when it has one.
const staticUrl = new URL("./", import.meta.url);  // started from a blob (live-calculators.js): not self.location
const timings = { startedMs: performance.now() };

async function load() {
  const manifest = await (await fetch(new URL("live/packages.json", staticUrl))).json();
  const pyodideUrl = new URL(manifest.pyodide, staticUrl);
  const [{ loadPyodide }, wheels] = await Promise.all([
    import(pyodideUrl.href),
    Promise.all(manifest.wheels.map(async (wheel) => {
      const path = "live/" + wheel;
      const integrity = (manifest.integrity || {})[path];
      const response = await fetch(new URL(path, staticUrl), integrity ? { integrity } : {});
      return response.arrayBuffer();
    })),
  ]);
  const pyodide = await loadPyodide({ indexURL: pyodideUrl.href.replace(/[^/]*$/, ""), fullStdLib: false });
  timings.pyodideMs = performance.now();
  for (const data of wheels) pyodide.unpackArchive(data, "wheel");
  pyodide.runPython(`
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
`);
  timings.readyMs = performance.now();
  timings.bodyBytes = performance.getEntriesByType("resource").reduce((sum, r) => sum + (r.encodedBodySize || 0), 0);
  return pyodide;
}

const ready = load();
ready.then(
  () => self.postMessage({ ready: true, timings }),
  (error) => self.postMessage({ ready: false, error: String(error) }),
);

self.addEventListener("message", async (event) => {
  const { id, argv, config } = event.data;
  try {
    const pyodide = await ready;
    if (config !== undefined) {
      self.postMessage({ id, path: pyodide.globals.get("_write_config")(config) });
      return;
    }
    const started = performance.now();
    const answer = JSON.parse(pyodide.globals.get("_answer")(JSON.stringify(argv)));
    self.postMessage({ id, ...answer, ms: performance.now() - started });
  } catch (error) {
    self.postMessage({ id, error: String(error) });
  }
});
