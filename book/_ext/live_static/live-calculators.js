// The live calculators (book/_ext/live_calculators.py writes the form): the course's own
// `lab-utils` commands run by Pyodide in this page, from the wheel built with the website.
// The form and the command lines work at once; each answer appears when Python has loaded.
// window.liveCalculators exposes the state and timings to the browser test (tests/site).
(() => {
  const box = document.querySelector(".live-calculators");
  if (!box) return;
  const form = box.querySelector("form");
  const status = box.querySelector(".live-status");
  const root = new URL(document.documentElement.dataset.content_root || "./", document.baseURI);
  const staticUrl = new URL("_static/", root);
  const api = (window.liveCalculators = {
    state: "loading", formReadyMs: performance.now(), pythonReadyMs: null, firstAnswerMs: null,
    runs: 0, error: null, pending: Promise.resolve(), timeline: [],
  });
  function setState(state) {
    box.dataset.state = api.state = state;
    api.timeline.push({ state, ms: performance.now() });
  }
  setState("loading");

  const value = (name) => form.elements[name].value.trim();
  function commands() {
    const model = value("model"), gpu = value("gpu"), method = value("method");
    const seqLen = value("seq_len"), tokens = value("tokens"), perDay = value("requests_per_day");
    const inference = method === "inference";
    return {
      memory: ["memory", "--model", model, "--method", method, "--seq-len", seqLen],
      cost: inference ? ["cost", "serve", "--model", model, "--gpu", gpu]
        : ["cost", "fine-tune", "--model", model, "--tokens", tokens, "--method", method, "--gpu", gpu,
           "--seq-len", seqLen],
      pick: inference ? ["pick", "serve", "--model", model, "--requests-per-day", perDay]
        : ["pick", "fine-tune", "--model", model, "--tokens", tokens, "--method", method, "--seq-len", seqLen],
    };
  }
  const quote = (arg) => (/^[\w.,@%+=:\/-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`);
  function showCommands() {
    for (const [name, argv] of Object.entries(commands())) {
      const section = box.querySelector(`[data-command="${name}"]`);
      section.querySelector(".live-command").textContent = "lab-utils " + argv.map(quote).join(" ");
    }
  }

  let python = null;
  async function load() {
    const manifest = await (await fetch(new URL("live/packages.json", staticUrl))).json();
    const { loadPyodide } = await import(new URL(manifest.pyodide, staticUrl).href);
    const indexURL = new URL(manifest.pyodide, staticUrl).href.replace(/[^/]*$/, "");
    const pyodide = await loadPyodide({ indexURL, fullStdLib: false });
    for (const wheel of manifest.wheels) {
      const data = await (await fetch(new URL("live/" + wheel, staticUrl))).arrayBuffer();
      pyodide.unpackArchive(data, "wheel");
    }
    pyodide.runPython(`
import contextlib, io, json
from lab_utils import cli

def _run_lab_utils(argv_json):
    """Run one lab-utils command; its exit status, output and error output as JSON."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(json.loads(argv_json))
        except SystemExit as stop:
            status = stop.code
    return json.dumps({"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()})
`);
    const run = pyodide.globals.get("_run_lab_utils");
    return (argv) => JSON.parse(run(JSON.stringify(argv)));
  }

  function answer() {
    api.runs += 1;
    for (const [name, argv] of Object.entries(commands())) {
      const section = box.querySelector(`[data-command="${name}"]`);
      const result = python(argv);
      const text = result.status === 0 ? result.stdout : result.stderr;
      section.dataset.argv = JSON.stringify(argv);
      section.dataset.status = String(result.status);
      section.querySelector(".live-output").textContent = text;
      const headline = section.querySelector(".live-headline");
      headline.textContent = "";
      delete section.dataset.json;
      if (name === "memory" && result.status === 0) {
        // the chosen GPU's row of the command's own table: "T4   16.0 GB   13.9 GB  needs at least 2 ..."
        // (vendor memory, usable memory less the CUDA context reserve, verdict)
        const gpu = value("gpu");
        const row = result.stdout.split("\n").find((line) => line.startsWith(gpu + "  "));
        if (row) {
          const [vendor, usable, verdict] = row.slice(gpu.length).trim().split(/\s{2,}/);
          headline.textContent = `${gpu}: ${verdict}; usable ${usable} of the vendor's ${vendor}`;
        }
      }
      if (name === "pick" && result.status === 0) {
        const json = python([...argv, "--json"]);
        section.dataset.json = json.stdout;
        headline.textContent = JSON.parse(json.stdout).verdict;
      }
    }
  }

  function update() {
    showCommands();
    if (!python) return;
    setState("computing");
    // let the browser paint "computing" before Python holds the page's thread
    api.pending = new Promise((resolve) => setTimeout(() => {
      try {
        answer();
        setState("ready");
      } catch (error) {
        setState("error");
        api.error = String(error);
        status.textContent = "The calculators stopped: " + error;
      }
      resolve(api.state);
    }, 0));
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  showCommands();
  load().then((run) => {
    python = run;
    api.pythonReadyMs = performance.now();
    update();
    return api.pending;
  }).then(() => {
    api.firstAnswerMs = performance.now();
    const seconds = (api.firstAnswerMs / 1000).toFixed(1);
    status.textContent = `Computed in this page by lab_utils (first answer ${seconds} s after the page opened). ` +
      "Change any input: the answers follow.";
  }).catch((error) => {
    setState("error");
    api.error = String(error);
    status.textContent = "Python could not load in this page (" + error + "). The commands above give the " +
      "same answers in a terminal with the course installed.";
  });
})();
