// The page of a long document (a record with `long`: sources/hf/long/record.py; docs/explorer.md, "Long
// inputs"), in the report (offline) and on serve's /long page. An overview of one layer's map (a head or
// the mean over heads) at the coarsest pooled level, beside the layer x head grids of the summaries (sink,
// entropy, distance, local; a cell picks its layer and head). Clicking a cell zooms to the next finer
// level around it (SPAN cells a side); at the finest level, to the exact tile of the clicked cell, tokens
// on the axes: from the server (`backend.exact`), or, in a report, the exact rows `--rows` chose over
// the tile's keys. The sink-aware toggle draws the maps without the first token's column, renormalised.
// A backend answers what the record does not hold: `pooled(level, layer, head, sink, r0, r1, c0, c1)`
// and `exact(layer, head, sink, q0, q1, k0, k1)`, each a Promise of a Float32Array (rows x cols).
"use strict";

const AttnLong = (() => {
  const SPAN = 32;
  const NAMES = {sink: "sink (mass on the first token)", entropy: "entropy (nats)", distance: "distance (tokens back)", local: "local mass"};
  const el = (...args) => AttnView.el(...args);
  const fmt = (x) => x.toLocaleString("en-US");

  function bytes(text, scale) {
    const raw = atob(text), out = new Float32Array(raw.length), s = scale / 255;
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i) * s;
    return out;
  }

  // rows r0..r1 x cols c0..c1 of (T x T) maps, one per head, read by `map(h)`: the head's, or the mean over heads.
  function slice(map, T, heads, head, r0, r1, c0, c1) {
    const out = new Float32Array((r1 - r0) * (c1 - c0)), chosen = head === "mean" ? [...Array(heads).keys()] : [Number(head)];
    for (const h of chosen) {
      const m = map(h);
      for (let i = r0; i < r1; i++) for (let j = c0; j < c1; j++) out[(i - r0) * (c1 - c0) + j - c0] += m[i * T + j] / chosen.length;
    }
    return out;
  }

  // The levels the record holds, as tiles: the offline backend and the server's first answer.
  function embedded(long) {
    const N = long.tokens.length, cache = new Map();
    function map(s, sink, l, h) {
      const key = `${s}/${sink}/${l}/${h}`, packed = long.pooled[String(s)][sink ? "with" : "without"];
      if (!cache.has(key)) cache.set(key, bytes(packed.data[l][h], packed.scale[l][h]));
      return cache.get(key);
    }
    return {
      has: (s) => String(s) in long.pooled,
      pooled: async (s, l, head, sink, r0, r1, c0, c1) => slice((h) => map(s, sink, l, h), Math.ceil(N / s), long.heads, head, r0, r1, c0, c1),
    };
  }

  // The exact rows `--rows` chose (a report), over keys k0..k1; without the sink, each row renormalised over keys 1..q.
  function chosenRows(long, l, head, sink, k0, k1) {
    const N = long.tokens.length, m = long.rows.positions.length, rows = long.rows;
    const full = slice((h) => bytes(rows.data[l][h], rows.scale[l][h]), N, long.heads, head, 0, m, 0, N);
    if (!sink) {
      for (let i = 0; i < m; i++) {
        let rest = 0;
        for (let j = 1; j < N; j++) rest += full[i * N + j];
        for (let j = 0; j < N; j++) full[i * N + j] = j && rest > 0 ? full[i * N + j] / rest : 0;
      }
    }
    const out = new Float32Array(m * (k1 - k0));
    for (let i = 0; i < m; i++) out.set(full.subarray(i * N + k0, i * N + k1), i * (k1 - k0));
    return out;
  }

  // The layer x head grid of one summary, shaded by value / the grid's largest; a click picks its layer and head.
  function grid(name, values, layers, pick) {
    const vmax = values.flat().reduce((a, v) => Math.max(a, Math.abs(v)), 0) || 1;
    const head = el("tr", {}, [el("th", {}), ...values[0].map((_, h) => el("th", {text: `h${h}`}))]);
    const rows = values.map((row, l) => el("tr", {}, [el("th", {text: `layer ${layers[l]}`}), ...row.map((v, h) => {
      const td = el("td", {class: "attn-long-cell", title: `${NAMES[name]}: layer ${layers[l]}, head ${h}: ${v.toFixed(4)}`, "data-value": v.toFixed(4)});
      td.style.backgroundColor = AttnView.shade(Math.abs(v) / vmax);
      td.addEventListener("click", () => pick(l, h));
      return td;
    })]));
    return el("div", {class: "attn-long-grid"}, [el("div", {class: "attn-long-grid-title", text: NAMES[name]}), el("table", {}, [head, ...rows])]);
  }

  const span = (long, s, a, b) => `${fmt(a * s)}\u2013${fmt(Math.min(long.tokens.length, b * s) - 1)}`;

  // A view's labels along the queries (`q`) or the keys: tokens (exact), query positions and tokens (chosen rows), token ranges (pooled).
  function labels(long, v, axis) {
    const [a, b] = axis === "q" ? [v.r0, v.r1] : [v.c0, v.c1];
    if (v.level === "rows") return axis === "q" ? long.rows.positions.map((q) => `${q}: ${long.tokens[q]}`) : long.tokens.slice(a, b);
    if (v.level === 1) return long.tokens.slice(a, b);
    return [...Array(b - a).keys()].map((i) => span(long, v.level, a + i, a + i + 1));
  }

  function describe(long, v) {
    const range = (a, b) => `${fmt(a)}\u2013${fmt(b - 1)}`;
    if (v.level === "rows") return `the exact rows chosen with --rows (${long.rows.positions.join(", ")}) over keys ${range(v.c0, v.c1)}`;
    if (v.level === 1) return `exact attention: queries ${range(v.r0, v.r1)} \u00d7 keys ${range(v.c0, v.c1)}`;
    return `pooled level ${fmt(v.level)} (block means of ${fmt(v.level)} \u00d7 ${fmt(v.level)} tokens): queries ${span(long, v.level, v.r0, v.r1)} \u00d7 keys ${span(long, v.level, v.c0, v.c1)}`;
  }

  // The view under cell (i, j) of view `v`: the next finer level around it, the exact tile under it (a server), the
  // chosen rows over its keys (a report), or null (exact already).
  function zoomed(long, levels, v, at, backend) {
    const N = long.tokens.length, k = levels.indexOf(v.level);
    if (k < 0) return null;
    const I = v.r0 + at.i, J = v.c0 + at.j, s = v.level;
    if (k + 1 < levels.length) {
      const f = levels[k + 1], t = Math.ceil(N / f);
      const around = (c) => Math.max(0, Math.min(Math.max(0, t - SPAN), Math.floor(((c + 0.5) * s) / f) - SPAN / 2));
      const r0 = around(I), c0 = around(J);
      return {level: f, r0, r1: Math.min(t, r0 + SPAN), c0, c1: Math.min(t, c0 + SPAN)};
    }
    if (backend) return {level: 1, r0: I * s, r1: Math.min(N, (I + 1) * s), c0: J * s, c1: Math.min(N, (J + 1) * s)};
    if (long.rows) return {level: "rows", r0: 0, r1: long.rows.positions.length, c0: J * s, c1: Math.min(N, (J + 1) * s)};
    return null;
  }

  function render(container, record, backend = null) {
    const long = record.long, N = long.tokens.length, local = embedded(long);
    const levels = long.levels.filter((s) => local.has(s) || backend);  // a report's zoom stops at the finest level it holds
    const card = el("section", {class: "attn-card attn-long"});
    card.appendChild(el("div", {class: "attn-source", text: record.source}));
    card.appendChild(el("div", {class: "attn-output", text: `${record.model}: ${fmt(N)} tokens, ${long.layers.length} layers, ${long.heads} heads`}));
    const layerLabel = AttnView.select("attn-long-layer", long.layers.map((l, i) => [String(i), `layer ${l}`]), "layer");
    const headLabel = AttnView.select("attn-long-head", [["mean", "mean over heads"], ...[...Array(long.heads).keys()].map((h) => [String(h), `head ${h}`])], "head");
    const sinkBox = el("input", {type: "checkbox", class: "attn-long-sink"});
    const out = el("button", {type: "button", class: "attn-long-out", text: "zoom out"}), home = el("button", {type: "button", class: "attn-long-home", text: "overview"});
    const where = el("div", {class: "attn-long-where"}), status = el("span", {class: "attn-long-status", role: "status"});
    const map = el("div", {class: "attn-long-map"}), hover = el("div", {class: "attn-hover", text: "\u00a0"});
    const layerInput = layerLabel.querySelector("select"), headInput = headLabel.querySelector("select");
    layerInput.value = String(long.layers.length - 1);
    const controls = el("div", {class: "attn-controls"}, [layerLabel, headLabel,
      el("label", {}, [sinkBox, document.createTextNode(" sink-aware (first token's column removed, rows renormalised)")]), home, out, status]);
    const grids = el("div", {class: "attn-long-grids"}, Object.keys(NAMES).filter((n) => long.grids[n]).map((n) => grid(n, long.grids[n], long.layers, (l, h) => {
      layerInput.value = String(l);
      headInput.value = String(h);
      draw();
    })));
    card.append(controls, where, el("div", {class: "attn-long-body"}, [el("div", {}, [map, hover]), grids]));
    container.appendChild(card);

    const top = {level: levels[0], r0: 0, r1: Math.ceil(N / levels[0]), c0: 0, c1: Math.ceil(N / levels[0])};
    const stack = [top];
    let drawn = 0;

    function values(v, l, head, sink) {
      if (v.level === "rows") return Promise.resolve(chosenRows(long, l, head, sink, v.c0, v.c1));
      if (v.level === 1) return backend.exact(long.layers[l], head, sink, v.r0, v.r1, v.c0, v.c1);
      if (local.has(v.level)) return local.pooled(v.level, l, head, sink, v.r0, v.r1, v.c0, v.c1);
      return backend.pooled(v.level, long.layers[l], head, sink, v.r0, v.r1, v.c0, v.c1);
    }

    function zoom(at) {
      const next = zoomed(long, levels, stack[stack.length - 1], at, backend);
      if (next) { stack.push(next); draw(); }
    }

    async function draw() {
      const v = stack[stack.length - 1], l = Number(layerInput.value), head = headInput.value, sink = !sinkBox.checked, mine = ++drawn;
      where.textContent = describe(long, v);
      status.textContent = v.level === 1 || !local.has(v.level) ? "fetching\u2026" : "";
      let w;
      try {
        w = await values(v, l, head, sink);
      } catch (e) {
        if (mine === drawn) status.textContent = String(e.message || e);
        return;
      }
      if (mine !== drawn) return;
      status.textContent = "";
      const rows = labels(long, v, "q"), cols = labels(long, v, "k");
      const view = AttnDraw.heatmap({rows, cols, Tq: rows.length, Tk: cols.length}, w);
      const stage = AttnDraw.mount(view, "attn-heatmap", (text) => { hover.textContent = text || "\u00a0"; }, zoom);
      const level = v.level === "rows" ? "rows" : String(v.level), first = (a) => (typeof v.level === "number" && v.level > 1 ? a * v.level : a);
      Object.assign(map.dataset, {level, q0: first(v.r0), k0: first(v.c0), rows: rows.length, cols: cols.length, cell: view.cell, left: view.left, top: view.top});
      map.replaceChildren(el("div", {class: "attn-scroll"}, [stage]));
    }

    for (const input of [layerInput, headInput, sinkBox]) input.addEventListener("change", draw);
    out.addEventListener("click", () => { if (stack.length > 1) stack.pop(); draw(); });
    home.addEventListener("click", () => { stack.splice(1); draw(); });
    draw();
    return card;
  }

  return {render, embedded, SPAN};
})();

// In a report, a record with `long` is drawn by this page instead of the common card.
AttnView.render = ((card) => (container, record) => (record.long ? AttnLong.render(container, record) : card(container, record)))(AttnView.card);
