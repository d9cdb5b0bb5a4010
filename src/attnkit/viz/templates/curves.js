// Training curves of runs (their metrics.jsonl, read by attnkit.viz.curves): one small hand-drawn SVG
// chart per panel (the loss, the learning rate, each validation metric the run logged), every run's
// lines overlaid in one colour each, against updates or minutes. Plain JavaScript, no dependencies:
// `attnkit report` inlines it, `attnkit serve` serves it as /static/curves.js.
// `AttnCurves.draw(container, runs)` draws `runs`, a list of `Curves.to_json()` objects.
"use strict";

const AttnCurves = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const W = 330, H = 190, LEFT = 56, RIGHT = 12, TOP = 22, BOTTOM = 32;
  // matplotlib's C0..C9, the colours of `attnkit plot --metrics`.
  const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const AXES = {step: "updates", minutes: "minutes"};
  const DASH = {train: "", valid: "5 3"};

  function node(tag, attrs = {}, text = "", ns = null) {
    const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) e.setAttribute(key, value);
    if (text) e.textContent = text;
    return e;
  }
  const svg = (tag, attrs, text) => node(tag, attrs, text, NS);

  // [low, high] of `values`, widened when they are all equal.
  function extent(values) {
    let low = values.reduce((a, b) => Math.min(a, b), Infinity), high = values.reduce((a, b) => Math.max(a, b), -Infinity);
    if (low === high) { const pad = Math.abs(low) * 0.05 || 1; low -= pad; high += pad; }
    return [low, high];
  }

  function label(v) {
    const a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(1) : String(+v.toPrecision(4));
  }

  // One chart: `title`, then each of `lines` ({colour, line: {label, step, minutes, value}}) against `x`.
  function chart(title, lines, x) {
    const root = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "attn-curve", role: "img", "aria-label": `${title} against ${AXES[x]}`});
    const [x0, x1] = extent(lines.flatMap((l) => l.line[x])), [y0, y1] = extent(lines.flatMap((l) => l.line.value));
    const px = (v) => (LEFT + ((v - x0) / (x1 - x0)) * (W - LEFT - RIGHT)).toFixed(1);
    const py = (v) => (H - BOTTOM - ((v - y0) / (y1 - y0)) * (H - TOP - BOTTOM)).toFixed(1);
    root.appendChild(svg("rect", {x: LEFT, y: TOP, width: W - LEFT - RIGHT, height: H - TOP - BOTTOM, fill: "none", stroke: "#bbb"}));
    root.appendChild(svg("text", {x: LEFT, y: TOP - 7, class: "attn-curve-title"}, title));
    root.appendChild(svg("text", {x: LEFT - 4, y: TOP + 4, "text-anchor": "end"}, label(y1)));
    root.appendChild(svg("text", {x: LEFT - 4, y: H - BOTTOM, "text-anchor": "end"}, label(y0)));
    root.appendChild(svg("text", {x: LEFT, y: H - BOTTOM + 13, "text-anchor": "start"}, label(x0)));
    root.appendChild(svg("text", {x: W - RIGHT, y: H - BOTTOM + 13, "text-anchor": "end"}, label(x1)));
    root.appendChild(svg("text", {x: (LEFT + W - RIGHT) / 2, y: H - 4, "text-anchor": "middle"}, AXES[x]));
    for (const {colour, line} of lines) {
      const points = line[x].map((v, i) => `${px(v)},${py(line.value[i])}`);
      root.appendChild(svg("polyline", {points: points.join(" "), fill: "none", stroke: colour, "stroke-width": 1.5,
                                        "stroke-dasharray": DASH[line.label] || "", class: `attn-curve-${line.label}`}));
      if (line.label !== "train" && points.length <= 200) {
        for (const p of points) { const [cx, cy] = p.split(","); root.appendChild(svg("circle", {cx, cy, r: 2, fill: colour})); }
      }
    }
    return root;
  }

  // The legend: a swatch per run and record kind.
  function legend(runs) {
    const box = node("div", {class: "attn-curves-legend"});
    runs.forEach((run, i) => {
      const kinds = [...new Set(run.panels.flatMap((p) => p.lines.map((l) => l.label)))];
      for (const kind of kinds) {
        const swatch = svg("svg", {width: 26, height: 8});
        swatch.appendChild(svg("line", {x1: 0, y1: 4, x2: 26, y2: 4, stroke: COLOURS[i % 10], "stroke-width": 2, "stroke-dasharray": DASH[kind] || ""}));
        const item = node("span", {class: "attn-curves-item"});
        item.append(swatch, ` ${runs.length > 1 ? run.name + " " : ""}${kind}`);
        box.appendChild(item);
      }
    });
    return box;
  }

  function draw(container, runs) {
    const section = node("section", {class: "attn-curves"});
    section.appendChild(node("h2", {}, "Training curves"));
    section.appendChild(node("p", {class: "attn-curves-source"}, `from ${runs.map((r) => r.path).join(", ")}`));
    const picker = node("select", {class: "attn-curves-x", "aria-label": "x axis"});
    for (const [value, text] of Object.entries(AXES)) picker.appendChild(node("option", {value}, text));
    const controls = node("label", {class: "attn-curves-controls"}, "against ");
    controls.appendChild(picker);
    const charts = node("div", {class: "attn-curves-charts"});
    const panels = new Map();  // key -> label, in the order the runs first show them
    for (const run of runs) for (const p of run.panels) if (!panels.has(p.key)) panels.set(p.key, p.label);
    const render = () => {
      charts.replaceChildren();
      for (const [key, title] of panels) {
        const lines = runs.flatMap((run, i) => run.panels.filter((p) => p.key === key).flatMap((p) => p.lines.map((line) => ({colour: COLOURS[i % 10], line}))));
        charts.appendChild(chart(title, lines, picker.value));
      }
    };
    picker.addEventListener("change", render);
    section.append(controls, legend(runs), charts);
    render();
    container.appendChild(section);
    return section;
  }

  return {draw};
})();
