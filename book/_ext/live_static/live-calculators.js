// The live calculators (book/_ext/live_calculators.py writes the form): the course's own
// `lab-utils` commands, run by Pyodide in a Web Worker (live-worker.js) started as the page opens,
// so the page scrolls and takes typing while Python computes. The form and the command lines work
// at once; each answer appears when it is computed, beside its figure (live-figures.js), drawn
// from the command's --json answer. A service worker keeps Python for later visits, offline too.
// window.liveCalculators exposes the state and timings to the browser test (tests/site) and to
// scripts/bench_live_calculators.py.
(() => {
  const box = document.querySelector(".live-calculators");
  if (!box) return;
  const form = box.querySelector("form");
  const status = box.querySelector(".live-status");
  const api = (window.liveCalculators = {
    state: "loading", formReadyMs: performance.now(), pythonReadyMs: null, firstAnswerMs: null,
    allAnswersMs: null, runs: 0, error: null, pending: Promise.resolve("loading"), timeline: [],
    answerMs: {}, worker: null,
  });
  function setState(state) {
    box.dataset.state = api.state = state;
    api.timeline.push({ state, ms: performance.now() });
  }
  setState("loading");

  // Python first: the worker was started by live-start.js, inline in the page's <head>, before
  // the page was parsed; its replies are matched to the questions here by id. Questions are
  // asked once it is ready, so it is made by then.
  const start = window.liveCalculatorsStart;
  api.pageOriginMs = performance.timeOrigin;  // the worker's marks are on its own clock (its timeOrigin)
  let nextId = 0, worker = null;
  const waiting = new Map();  // id -> the question's { resolve, reject }
  const STOPPED = new Error("the worker was stopped: the page was left");
  function connect() {
    start.worker.then((started) => {
      worker = api.worker = started;
      worker.addEventListener("message", (event) => {
        const settle = waiting.get(event.data.id);
        waiting.delete(event.data.id);
        if (settle) settle.resolve(event.data);
      });
    });
    return start.ready;
  }
  const ask = (message) => new Promise((resolve, reject) => {
    const id = ++nextId;
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, ...message });
  });

  const value = (name) => form.elements[name].value.trim();
  const ownModel = () => value("config") !== "";
  function commands() {
    const model = ownModel() ? "config.json" : value("model");
    const gpu = value("gpu"), method = value("method");
    const seqLen = value("seq_len"), tokens = value("tokens"), perDay = value("requests_per_day");
    const inference = method === "inference";
    return {
      memory: ["memory", "--model", model, "--method", method, "--seq-len", seqLen],
      cost: inference ? ["cost", "serve", "--model", model, "--gpu", gpu, "--curve"]
        : ["cost", "fine-tune", "--model", model, "--tokens", tokens, "--method", method, "--gpu", gpu,
           "--seq-len", seqLen],
      pick: inference ? ["pick", "serve", "--model", model, "--requests-per-day", perDay]
        : ["pick", "fine-tune", "--model", model, "--tokens", tokens, "--method", method, "--seq-len", seqLen],
      latency: ["latency", "--model", model, "--gpu", gpu, "--" + value("load"), value("load_value"),
        "--prompt-len", value("prompt_len"), "--output-len", value("output_len"), "--precision", value("precision"),
        "--slo-ttft-ms", value("slo_ttft_ms"), "--slo-tpot-ms", value("slo_tpot_ms")],
    };
  }
  const quote = (arg) => (/^[\w.,@%+=:\/-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`);
  function showCommands() {
    for (const [name, argv] of Object.entries(commands())) {
      const section = box.querySelector(`[data-command="${name}"]`);
      section.querySelector(".live-command").textContent = "lab-utils " + argv.map(quote).join(" ");
    }
  }

  function show(name, argv, result) {
    const section = box.querySelector(`[data-command="${name}"]`);
    const text = result.status === 0 ? result.stdout : result.stderr;
    section.dataset.argv = JSON.stringify(argv);
    section.dataset.status = String(result.status);
    section.querySelector(".live-output").textContent = text;
    const headline = section.querySelector(".live-headline");
    headline.textContent = "";
    delete section.dataset.json;
    if (result.status === 0 && result.json) section.dataset.json = result.json;
    const data = result.status === 0 && result.json ? JSON.parse(result.json) : null;
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
    if (name === "pick" && data) headline.textContent = data.verdict;
    const figure = section.querySelector(".live-figure");
    const option = (flag) => argv[argv.indexOf(flag) + 1];  // a value of this answer's own command line
    const context = name === "latency"
      ? { sloTtftMs: Number(option("--slo-ttft-ms")), sloTpotMs: Number(option("--slo-tpot-ms")) }
      : { gpu: value("gpu"), requestsPerDay: Number(value("requests_per_day")) };
    const drawn = data && window.liveFigures ? window.liveFigures.draw(name, data, context) : null;
    figure.hidden = !drawn;
    section.querySelector(".live-svg").innerHTML = drawn ? drawn.svg : "";
    section.querySelector(".live-alt").textContent = drawn ? drawn.alt : "";
    if (drawn) section.dataset.figure = JSON.stringify(drawn.data); else delete section.dataset.figure;
  }

  // One round at a time: a round answers the commands for the form as it is, each only when its
  // command line (or the pasted config) changed since its answer was shown; inputs changed
  // meanwhile start a new round as soon as the command in flight returns (nothing stale is shown).
  let python = false, dirty = false, running = false, configSent = null;
  const shownArgv = {};  // command -> the argv (and config) of the answer on show
  async function round() {
    running = true;
    setState("computing");
    do {
      dirty = false;
      api.runs += 1;
      const config = ownModel() ? form.elements.config.value : "";  // the file as pasted, untrimmed
      if (config !== configSent) {
        await ask({ config });
        configSent = config;
      }
      const asked = commands();
      // a serving month's curve takes longest: the ranking first (a fine-tune's cost is quick);
      // the latency simulation last
      const order = value("method") === "inference" ? ["memory", "pick", "cost"] : ["memory", "cost", "pick"];
      for (const name of [...order, "latency"]) {
        const argv = asked[name], key = JSON.stringify([argv, config]);
        if (dirty) break;
        if (shownArgv[name] === key) continue;
        const started = performance.now();
        const result = await ask({ argv });
        if (result.error) throw new Error(result.error);
        if (dirty) break;
        show(name, argv, result);
        shownArgv[name] = key;
        api.answerMs[name] = performance.now() - started;
        if (!api.firstAnswerMs) api.firstAnswerMs = performance.now();
      }
    } while (dirty);
    running = false;
    if (!api.allAnswersMs) api.allAnswersMs = performance.now();
    setState("ready");
    return api.state;
  }
  function update() {
    showCommands();
    if (!python) return;
    if (running) { dirty = true; return; }
    api.pending = round().catch((error) => {
      running = false;
      if (error === STOPPED) return api.state;  // left mid-round: coming back asks again
      setState("error");
      api.error = String(error);
      status.textContent = "The calculators stopped: " + error;
      return api.state;
    });
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  const drop = form.elements.config;
  drop.addEventListener("dragover", (event) => event.preventDefault());
  drop.addEventListener("drop", async (event) => {
    event.preventDefault();
    const file = event.dataTransfer.files[0];
    if (!file) return;
    drop.value = await file.text();
    update();
  });
  // The service worker (live-start.js registered it on a first visit): registered again once the
  // first answers are shown (a newer build's is then installed), and sent the page's files (and
  // any of Python's it did not answer) to keep.
  function keepForLater() {
    if (!("serviceWorker" in navigator)) return;
    start.registerServiceWorker()
      .then(() => navigator.serviceWorker.ready)
      .then((registration) => {
        const keep = () => registration.active && registration.active.postMessage({
          keep: [start.page, start.workerUrl.href, start.packagesUrl.href,
                 ...performance.getEntriesByType("resource").map((r) => r.name.split("#")[0])],
        });
        if (document.readyState === "complete") keep(); else addEventListener("load", keep);
        api.serviceWorker = "ready";
      })
      .catch((error) => { api.serviceWorker = "unavailable: " + error; });
  }


  function answerOnceReady(workerReady) {
    workerReady.then((timings) => {
      python = true;
      api.pythonReadyMs = performance.now();
      api.workerTimings = timings;
      update();
      return api.pending;
    }).then(() => {
      keepForLater();
      if (api.state !== "ready") return;
      const seconds = (api.firstAnswerMs / 1000).toFixed(1);
      status.textContent = `Computed in this page by lab_utils (first answer ${seconds} s after the page opened). ` +
        "Change any input: the answers follow.";
    }).catch((error) => {
      setState("error");
      api.error = String(error);
      status.textContent = "Python could not load in this page (" + error + "). The commands above give the " +
        "same answers in a terminal with the course installed.";
    });
  }

  // A page the browser keeps in its back-forward cache keeps no Python: leaving it ends the worker
  // (Chromium 156 crashed the tab's renderer now and then when it later ended a worker left frozen
  // in that cache), and coming back starts another, which answers what the form then asks (the
  // answers on show stay). A page left for good ends its worker as always.
  addEventListener("pagehide", (event) => {
    if (!event.persisted) return;
    start.worker.then((stopping) => stopping.terminate());
    python = false;
    configSent = null;
    for (const settle of waiting.values()) settle.reject(STOPPED);
    waiting.clear();
  });
  addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    setState("loading");
    start.startWorker();
    answerOnceReady(connect());
  });

  showCommands();
  answerOnceReady(connect());
})();
