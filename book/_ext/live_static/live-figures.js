// The live calculators' figures: one renderer, plain SVG, drawn from a command's --json answer.
// Every number drawn or written here is a value of that answer (bytes, dollars, seconds, hours);
// this file only places and formats them, it computes no result. Each figure comes with a text
// alternative that states its numbers, and `data`: exactly the values it drew (the browser test
// compares them with the CLI's --json for the same inputs).
(() => {
  const W = 640, H = 300, M = { left: 64, right: 32, top: 16, bottom: 48 };
  const COLOURS = ["#0072b2", "#e69f00", "#cc79a7", "#d55e00", "#56b4e9", "#f0e442", "#009e73", "#999999"];
  const KIND_COLOURS = { gpu: "#0072b2", serverless: "#e69f00", hosted: "#cc79a7", api: "#d55e00", cpu: "#009e73" };
  const escape = (text) => String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const gb = (bytes) => `${(bytes / 1e9).toFixed(1)} GB`;
  const usd = (dollars) => (dollars >= 100 ? `$${Math.round(dollars).toLocaleString("en")}` : `$${dollars.toFixed(2)}`);
  const seconds = (s) => `${s.toPrecision(3)} s`;

  function svg(title, body) {
    return `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="${escape(title)}" ` +
      `xmlns="http://www.w3.org/2000/svg" font-size="12" font-family="sans-serif"><title>${escape(title)}</title>${body}</svg>`;
  }
  function logScale(values, from, to) {
    const logs = values.filter((v) => v > 0).map(Math.log10);
    let low = Math.floor(Math.min(...logs)), high = Math.ceil(Math.max(...logs));
    if (high === low) high += 1;
    return { at: (v) => from + ((Math.log10(v) - low) / (high - low)) * (to - from), low, high };
  }
  const tickLabel = (power, unit) => (unit === "$" ? usd(10 ** power) : (10 ** power).toLocaleString("en") + unit);
  function axes(x, y, xTitle, yTitle, xUnit, yUnit) {
    let out = `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="#444"/>` +
      `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="#444"/>`;
    for (let p = x.low; p <= x.high; p++) {
      const at = x.at(10 ** p);
      out += `<line x1="${at}" y1="${M.top}" x2="${at}" y2="${H - M.bottom}" stroke="#ddd"/>` +
        `<text x="${at}" y="${H - M.bottom + 14}" text-anchor="middle">${escape(tickLabel(p, xUnit))}</text>`;
    }
    for (let p = y.low; p <= y.high; p++) {
      const at = y.at(10 ** p);
      out += `<line x1="${M.left}" y1="${at}" x2="${W - M.right}" y2="${at}" stroke="#ddd"/>` +
        `<text x="${M.left - 4}" y="${at + 4}" text-anchor="end">${escape(tickLabel(p, yUnit))}</text>`;
    }
    return out + `<text x="${(M.left + W - M.right) / 2}" y="${H - 8}" text-anchor="middle">${escape(xTitle)}</text>` +
      `<text x="12" y="${(M.top + H - M.bottom) / 2}" text-anchor="middle" transform="rotate(-90 12 ${(M.top + H - M.bottom) / 2})">${escape(yTitle)}</text>`;
  }

  // `lab-utils memory --json`: the parts stacked in one bar, under it the chosen GPU's usable memory,
  // one box per GPU the answer says the job needs (gpus_needed).
  function memory(answer, context) {
    const parts = Object.entries(answer.parts_bytes).filter(([, bytes]) => bytes > 0);
    const gpu = context.gpu, usable = (answer.usable_bytes || {})[gpu], needed = answer.gpus_needed[gpu];
    if (usable === undefined || needed === undefined) return null;
    // the bar's scale: the longer of the parts and the GPUs' boxes laid end to end (drawing only)
    const scale = (W - M.left - M.right - 120) / Math.max(answer.total_bytes, usable * needed);
    let x = M.left + 120, body = "";
    parts.forEach(([label, bytes], i) => {
      const width = bytes * scale;
      body += `<rect x="${x}" y="40" width="${width}" height="48" fill="${COLOURS[i % COLOURS.length]}"><title>${escape(label)}: ${gb(bytes)}</title></rect>`;
      x += width;
    });
    body += `<text x="${M.left + 112}" y="68" text-anchor="end">needed ${gb(answer.total_bytes)}</text>` +
      `<text x="${M.left + 112}" y="140" text-anchor="end">${escape(`${needed} x ${gpu}`)}</text>`;
    for (let k = 0; k < needed; k++) {  // one box per GPU, each its usable memory
      body += `<rect x="${M.left + 120 + k * usable * scale}" y="112" width="${usable * scale}" height="48" fill="none" stroke="#009e73" stroke-width="3"/>`;
    }
    body += `<text x="${M.left + 124}" y="140">usable ${gb(usable)}${needed > 1 ? " each" : ""}</text>`;
    parts.forEach(([label, bytes], i) => {
      const row = 190 + Math.floor(i / 2) * 22, column = M.left + (i % 2) * 280;
      body += `<rect x="${column}" y="${row - 11}" width="14" height="14" fill="${COLOURS[i % COLOURS.length]}"/>` +
        `<text x="${column + 20}" y="${row}">${escape(label)} ${gb(bytes)}</text>`;
    });
    const title = `Memory needed, ${gb(answer.total_bytes)}, against ${needed} x ${gpu}, usable ${gb(usable)}${needed > 1 ? " each" : ""}`;
    const alt = `${title}. Parts: ${parts.map(([label, bytes]) => `${label} ${gb(bytes)}`).join("; ")}.`;
    return { svg: svg(title, body), alt, data: { parts_bytes: Object.fromEntries(parts), total_bytes: answer.total_bytes, gpu, usable_bytes: usable, gpus_needed: needed } };
  }

  // `lab-utils pick --json`: each option that works, its cost against its time (a fine-tune's
  // hours, a served request's latency in seconds), log-log; the first in the ranking ringed.
  function ranking(answer) {
    // an option's dollars: cost_usd, or cost_per_job_usd / cost_per_month_usd (named by the answer's period)
    const dollars = (o) => ("cost_usd" in o ? o.cost_usd : o[`cost_per_${answer.period}_usd`]);
    const options = answer.options
      .map((o, rank) => ({ name: o.name, kind: o.kind, cost_usd: dollars(o), time: o.hours != null ? o.hours : o.latency_s, works: o.works, rank }))
      .filter((p) => p.works && p.cost_usd > 0);
    const points = options.filter((p) => p.time > 0), untimed = options.filter((p) => !(p.time > 0));
    if (!points.length) return null;
    const x = logScale(points.map((p) => p.time), M.left, W - M.right);
    const y = logScale(points.map((p) => p.cost_usd), H - M.bottom, M.top);
    const serving = answer.options.some((o) => o.latency_s != null);  // else a job's hours
    const unit = serving ? " s" : " h", time = (t) => (serving ? seconds(t) : `${t.toPrecision(3)} h`);
    let body = axes(x, y, serving ? "latency per request (s)" : "time of the job (hours)", `cost per ${answer.period || "job"} ($)`, unit, "$");
    points.forEach((p, i) => {  // the first drawn (highest in the ranking) ringed
      body += `<circle cx="${x.at(p.time)}" cy="${y.at(p.cost_usd)}" r="${i === 0 ? 7 : 5}" fill="${KIND_COLOURS[p.kind] || "#999"}" ` +
        `stroke="${i === 0 ? "#000" : "none"}" stroke-width="2" fill-opacity="0.8"><title>${escape(`${p.name}: ${usd(p.cost_usd)}, ${time(p.time)}`)}</title></circle>`;
    });
    const kinds = [...new Set(points.map((p) => p.kind))];
    kinds.forEach((kind, i) => {
      body += `<circle cx="${W - M.right - 100}" cy="${M.top + 8 + i * 16}" r="5" fill="${KIND_COLOURS[kind] || "#999"}"/>` +
        `<text x="${W - M.right - 90}" y="${M.top + 12 + i * 16}">${escape(kind)}</text>`;
    });
    const title = `The ranking's ${points.length} options that work and have a time: cost against time ` +
      `(ringed: ${points[0].name}, number ${points[0].rank + 1} in the ranking)`;
    const alt = `${title}. ${points.map((p) => `${p.name}: ${usd(p.cost_usd)}, ${time(p.time)}`).join("; ")}.` +
      (untimed.length ? ` Not drawn, priced per token with no time: ${untimed.map((p) => `${p.name} ${usd(p.cost_usd)}`).join("; ")}.` : "");
    return { svg: svg(title, body), alt, data: points.map((p) => ({ name: p.name, cost_usd: p.cost_usd, [serving ? "latency_s" : "hours"]: p.time })) };
  }

  // `lab-utils cost serve --curve --json`: monthly cost against requests per day, one line per
  // way of serving, the reader's volume (the form's) marked.
  function costCurves(answer, context) {
    const curves = answer.curve;
    if (!curves) return null;
    const you = curves.requests_per_day || context.requestsPerDay;
    const lines = Object.entries(curves.lines).filter(([, points]) => points.length);
    const all = lines.flatMap(([, points]) => points);
    const x = logScale(all.map((p) => p[0]).concat(you > 0 ? [you] : []), M.left, W - M.right);
    const y = logScale(all.map((p) => p[1]).filter((v) => v > 0), H - M.bottom, M.top);
    let body = axes(x, y, "requests per day", "cost per month ($)", "", "$");
    lines.forEach(([label, points], i) => {
      const shown = points.filter((p) => p[1] > 0);
      body += `<polyline fill="none" stroke="${COLOURS[i % COLOURS.length]}" stroke-width="2" points="${shown.map((p) => `${x.at(p[0])},${y.at(p[1])}`).join(" ")}"/>` +
        `<text x="${M.left + 8}" y="${M.top + 12 + i * 16}" fill="${COLOURS[i % COLOURS.length]}">${escape(label)}</text>`;
    });
    if (you > 0) {
      const at = x.at(you);
      body += `<line x1="${at}" y1="${M.top}" x2="${at}" y2="${H - M.bottom}" stroke="#000" stroke-dasharray="4 3"/>` +
        `<text x="${at + 4}" y="${H - M.bottom - 6}">you: ${escape(you.toLocaleString("en"))} a day</text>`;
    }
    const title = `Monthly cost against requests per day on ${curves.gpu}` + (you > 0 ? `, your ${you.toLocaleString("en")} a day marked` : "");
    const alt = `${title}. ${lines.map(([label, points]) => `${label}: ${points.map((p) => `${p[0].toLocaleString("en")} a day ${usd(p[1])}`).join(", ")}`).join(". ")}.`;
    return { svg: svg(title, body), alt, data: curves };
  }

  // `lab-utils latency --json`: time to first token and time per output token, median and 99th
  // percentile, each panel against its target (the command's own --slo-ttft-ms / --slo-tpot-ms),
  // linear from zero; throughput and goodput written under them.
  function latency(answer, context) {
    const ms = (s) => `${(s * 1000).toPrecision(3)} ms`;
    const panels = [
      { title: "time to first token", keys: ["ttft_p50_s", "ttft_p99_s"], target: context.sloTtftMs },
      { title: "time per output token", keys: ["tpot_p50_s", "tpot_p99_s"], target: context.sloTpotMs },
    ];
    if (panels.some((panel) => panel.keys.some((key) => typeof answer[key] !== "number"))) return null;
    const width = (W - M.left - M.right) / 2, top = M.top + 20, bottom = H - M.bottom - 20;
    let body = "";
    panels.forEach((panel, i) => {
      const left = M.left + i * width, values = panel.keys.map((key) => answer[key] * 1000);
      const high = Math.max(...values, panel.target > 0 ? panel.target : 0) * 1.15;
      const at = (v) => bottom - (v / high) * (bottom - top);
      body += `<text x="${left + width / 2 - 16}" y="${M.top + 6}" text-anchor="middle" font-weight="bold">${escape(panel.title)}</text>` +
        `<line x1="${left}" y1="${bottom}" x2="${left + width - 32}" y2="${bottom}" stroke="#444"/>`;
      panel.keys.forEach((key, j) => {
        const x = left + 24 + j * (width - 56) / 2, barWidth = (width - 56) / 2 - 16, value = answer[key];
        body += `<rect x="${x}" y="${at(value * 1000)}" width="${barWidth}" height="${bottom - at(value * 1000)}" fill="${COLOURS[j]}">` +
          `<title>${escape(`${panel.title}, ${j ? "p99" : "p50"}: ${ms(value)}`)}</title></rect>` +
          `<text x="${x + barWidth / 2}" y="${at(value * 1000) - 4}" text-anchor="middle">${escape(ms(value))}</text>` +
          `<text x="${x + barWidth / 2}" y="${bottom + 14}" text-anchor="middle">${j ? "p99" : "p50"}</text>`;
      });
      if (panel.target > 0) {
        body += `<line x1="${left}" y1="${at(panel.target)}" x2="${left + width - 32}" y2="${at(panel.target)}" stroke="#d55e00" stroke-width="2" stroke-dasharray="6 4"/>` +
          `<text x="${left + width - 32}" y="${at(panel.target) - 4}" text-anchor="end" fill="#d55e00">target ${escape(panel.target.toLocaleString("en"))} ms</text>`;
      }
    });
    const rate = (r) => `${r.toPrecision(3)} requests/s`;
    const served = `served ${rate(answer.requests_per_s)}, within the targets ${rate(answer.goodput_requests_per_s)}; ` +
      `${Math.round(answer.output_tokens_per_s).toLocaleString("en")} output tokens/s` +
      (answer.usd_per_million_tokens == null ? "" : `; ${usd(answer.usd_per_million_tokens)} per 1M tokens`);
    body += `<text x="${M.left}" y="${H - 12}">${escape(served)}</text>`;
    const title = `Time to first token ${ms(answer.ttft_p50_s)} (p50) and ${ms(answer.ttft_p99_s)} (p99) against a ` +
      `${context.sloTtftMs} ms target; time per output token ${ms(answer.tpot_p50_s)} and ${ms(answer.tpot_p99_s)} against ${context.sloTpotMs} ms`;
    const data = Object.fromEntries(panels.flatMap((panel) => panel.keys).map((key) => [key, answer[key]]));
    for (const key of ["requests_per_s", "goodput_requests_per_s", "output_tokens_per_s", "usd_per_million_tokens"]) data[key] = answer[key];
    return { svg: svg(title, body), alt: `${title}. ${served[0].toUpperCase()}${served.slice(1)}; end to end ${seconds(answer.e2e_p50_s)} (p50).`,
             data: { ...data, e2e_p50_s: answer.e2e_p50_s, slo_ttft_ms: context.sloTtftMs, slo_tpot_ms: context.sloTpotMs } };
  }

  window.liveFigures = {
    draw(command, answer, context) {
      if (command === "memory") return memory(answer, context);
      if (command === "pick") return ranking(answer);
      if (command === "cost") return costCurves(answer, context);
      if (command === "latency") return latency(answer, context);
      return null;
    },
  };
})();
