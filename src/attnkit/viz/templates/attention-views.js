// Canvas views of attention maps (heatmap, head view, model view), shared by the report, the served
// pages and notebooks: plain JavaScript, no dependencies. A view is a list of drawing operations
// (image, path, text, rect) that `paint` draws on a <canvas> and `svg` writes as SVG, so the PNG and
// SVG exports hold the same picture. Long inputs stay light: the heatmap is one image (a pixel per
// cell at most), the head view draws the top-k keys per query in a few paths, and the model view
// max-pools every map into a small thumbnail.
"use strict";

const AttnDraw = (() => {
  const BLUE = [31, 90, 200];

  // One kind of a record's maps, read lazily: `get(l, h)` is the (Tq x Tk) map, row-major. Maps come
  // as nested lists (`layers`: [layer][head][row][col]) or as bytes (`data`: [layer][head] base64 of
  // uint8, weight = byte / 255 * scale[layer][head]), as pages of long inputs carry them.
  function source(m) {
    const Tq = m.rows.length, Tk = m.cols.length;
    const L = m.data ? m.data.length : m.layers.length, H = m.data ? m.data[0].length : m.layers[0].length;
    function get(l, h) {
      if (!m.data) return Float32Array.from(m.layers[l][h].flat());
      const text = atob(m.data[l][h]), out = new Float32Array(text.length), s = m.scale[l][h] / 255;
      for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) * s;
      return out;
    }
    function mean(l) {
      const out = new Float32Array(Tq * Tk);
      for (let h = 0; h < H; h++) get(l, h).forEach((w, i) => { out[i] += w / H; });
      return out;
    }
    return {rows: m.rows, cols: m.cols, Tq, Tk, L, H, get, mean};
  }

  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  const maxOf = (w) => w.reduce((a, b) => (b > a ? b : a), 0) || 1;
  const headColour = (h, H) => `hsl(${Math.round((h * 360) / Math.max(H, 1))}, 75%, 42%)`;

  // (Tq x Tk) weights -> pixels of a (height x width) image, max-pooled, white to blue by w / vmax.
  function pixels(w, Tq, Tk, vmax, height = Tq, width = Tk) {
    const data = new Uint8ClampedArray(width * height * 4), pooled = new Float32Array(width * height);
    for (let i = 0; i < Tq; i++) {
      const r = Math.floor((i * height) / Tq) * width;
      for (let j = 0; j < Tk; j++) {
        const p = r + Math.floor((j * width) / Tk), v = w[i * Tk + j];
        if (v > pooled[p]) pooled[p] = v;
      }
    }
    pooled.forEach((v, p) => {
      const a = clamp(v / vmax, 0, 1);
      for (let c = 0; c < 3; c++) data[p * 4 + c] = 255 - (255 - BLUE[c]) * a;
      data[p * 4 + 3] = 255;
    });
    return {width, height, data};
  }

  // A map without queries or keys (an empty output or input): a message instead of a picture.
  function emptyView(src) {
    const text = `no attention to show: the ${src.Tq ? "input" : "output"} is empty`;
    return {width: 320, height: 24, ops: [{op: "text", x: 6, y: 12, text}], hit: () => null, overlay: () => [], say: () => ""};
  }

  // The heatmap of one map: rows = queries, columns = keys; tokens label the axes when cells are big enough.
  function heatmap(src, w) {
    if (!src.Tq || !src.Tk) return emptyView(src);
    const vmax = maxOf(w), c = clamp(Math.floor(720 / Math.max(src.Tq, src.Tk)), 1, 24), labels = c >= 10;
    const longest = (tokens) => Math.min(16, Math.max(...tokens.map((t) => t.length)));
    const left = labels ? 10 + 7 * longest(src.rows) : 2, top = labels ? 10 + 7 * longest(src.cols) : 2;
    const ops = [{op: "image", x: left, y: top, w: src.Tk * c, h: src.Tq * c, pixels: pixels(w, src.Tq, src.Tk, vmax)}];
    if (labels) {
      src.rows.forEach((t, i) => ops.push({op: "text", x: left - 4, y: top + (i + 0.5) * c, text: t.slice(0, 16), align: "right"}));
      src.cols.forEach((t, j) => ops.push({op: "text", x: left + (j + 0.5) * c, y: top - 4, text: t.slice(0, 16), rotate: true}));
    }
    const hit = (x, y) => {
      const i = Math.floor((y - top) / c), j = Math.floor((x - left) / c);
      return i >= 0 && j >= 0 && i < src.Tq && j < src.Tk ? {i, j, w: w[i * src.Tk + j]} : null;
    };
    const overlay = (at) => [{op: "rect", x: left + at.j * c - 1, y: top + at.i * c - 1, w: c + 2, h: c + 2, stroke: "#e07a10"}];
    const say = (at) => `${src.rows[at.i]} (${at.i + 1}) \u2192 ${src.cols[at.j]} (${at.j + 1}): ${at.w.toFixed(4)}`;
    return {width: left + src.Tk * c + 2, height: top + src.Tq * c + 2, ops, hit, overlay, say, vmax, cell: c, left, top};
  }

  // Per query, the k largest weights: [{j, w}] sorted by weight.
  function topK(w, Tq, Tk, k) {
    const out = [];
    for (let i = 0; i < Tq; i++) {
      const best = [];
      for (let j = 0; j < Tk; j++) {
        const v = w[i * Tk + j];
        if (best.length < k || v > best[best.length - 1].w) {
          best.push({j, w: v});
          best.sort((a, b) => b.w - a.w);
          if (best.length > k) best.pop();
        }
      }
      out.push(best);
    }
    return out;
  }

  // The head view: queries on the left, keys on the right, a line from each query to its top-k keys
  // in each chosen head's colour, opacity by weight / the head's largest weight.
  function headView(src, layer, heads, k) {
    if (!src.Tq || !src.Tk) return emptyView(src);
    const n = Math.max(src.Tq, src.Tk), rh = clamp(Math.floor(4000 / n), 1, 18), labels = rh >= 8, top = 22;
    const xq = 150, xk = 450, y = (i) => top + (i + 0.5) * rh;
    const ops = [{op: "text", x: xq, y: 10, text: "queries", align: "right"}, {op: "text", x: xk, y: 10, text: "keys"}];
    if (labels) {
      src.rows.forEach((t, i) => ops.push({op: "text", x: xq - 6, y: y(i), text: t.slice(0, 20), align: "right"}));
      src.cols.forEach((t, j) => ops.push({op: "text", x: xk + 6, y: y(j), text: t.slice(0, 20)}));
    }
    const lines = heads.map((h) => {
      const w = src.get(layer, h), best = topK(w, src.Tq, src.Tk, k), vmax = maxOf(w), buckets = [[], [], [], [], [], [], [], []];
      best.forEach((row, i) => row.forEach(({j, w: v}) => buckets[Math.min(7, Math.floor((v / vmax) * 8))].push(xq, y(i), xk, y(j))));
      buckets.forEach((d, b) => d.length && ops.push({op: "path", d, stroke: headColour(h, src.H), alpha: (b + 1) / 8, width: 1}));
      return {h, best, vmax};
    });
    const hit = (x, yy) => {
      const index = Math.floor((yy - top) / rh), side = x < (xq + xk) / 2 ? "query" : "key";
      return index >= 0 && index < (side === "query" ? src.Tq : src.Tk) ? {side, index} : null;
    };
    const overlay = (at) => lines.flatMap(({h, best, vmax}) => {
      const d = [];
      best.forEach((row, i) => row.forEach(({j}) => {
        if ((at.side === "query" && i === at.index) || (at.side === "key" && j === at.index)) d.push(xq, y(i), xk, y(j));
      }));
      return [{op: "path", d, stroke: headColour(h, src.H), alpha: 1, width: 2.5}];
    });
    const say = (at) => `${at.side} ${at.index + 1}: ${(at.side === "query" ? src.rows : src.cols)[at.index]}`;
    return {width: xk + 160, height: top + n * rh + 4, ops, hit, overlay, say};
  }

  // The model view: every layer x head as a thumbnail (max-pooled), each on its own colour scale.
  function modelView(src) {
    if (!src.Tq || !src.Tk) return emptyView(src);
    const s = clamp(Math.floor(760 / src.H) - 6, 24, 80), gap = 6, left = 52, top = 18;
    const ops = [];
    for (let h = 0; h < src.H; h++) ops.push({op: "text", x: left + h * (s + gap) + s / 2, y: 10, text: `head ${h + 1}`, align: "center"});
    for (let l = 0; l < src.L; l++) {
      ops.push({op: "text", x: left - 6, y: top + l * (s + gap) + s / 2, text: `layer ${l + 1}`, align: "right"});
      for (let h = 0; h < src.H; h++) {
        const w = src.get(l, h), ph = Math.min(s, src.Tq), pw = Math.min(s, src.Tk);
        const x = left + h * (s + gap), y = top + l * (s + gap);
        ops.push({op: "image", x, y, w: s, h: s, pixels: pixels(w, src.Tq, src.Tk, maxOf(w), ph, pw)}, {op: "rect", x, y, w: s, h: s, stroke: "#d5d8de", width: 1});
      }
    }
    const hit = (x, y) => {
      const h = Math.floor((x - left) / (s + gap)), l = Math.floor((y - top) / (s + gap));
      return h >= 0 && l >= 0 && h < src.H && l < src.L ? {l, h} : null;
    };
    const overlay = (at) => [{op: "rect", x: left + at.h * (s + gap) - 2, y: top + at.l * (s + gap) - 2, w: s + 4, h: s + 4, stroke: "#e07a10"}];
    const say = (at) => `layer ${at.l + 1}, head ${at.h + 1}: click to open it`;
    return {width: left + src.H * (s + gap), height: top + src.L * (s + gap), ops, hit, overlay, say};
  }

  function imageCanvas(p) {
    const off = document.createElement("canvas");
    off.width = p.width;
    off.height = p.height;
    off.getContext("2d").putImageData(new ImageData(p.data, p.width, p.height), 0, 0);
    return off;
  }

  // Draw `ops` on a 2-D context.
  function paint(ctx, ops) {
    ctx.font = "11px ui-monospace, monospace";
    for (const o of ops) {
      ctx.save();
      if (o.op === "image") {
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(imageCanvas(o.pixels), o.x, o.y, o.w, o.h);
      } else if (o.op === "path") {
        Object.assign(ctx, {strokeStyle: o.stroke, globalAlpha: o.alpha, lineWidth: o.width});
        ctx.beginPath();
        for (let i = 0; i < o.d.length; i += 4) { ctx.moveTo(o.d[i], o.d[i + 1]); ctx.lineTo(o.d[i + 2], o.d[i + 3]); }
        ctx.stroke();
      } else if (o.op === "rect") {
        Object.assign(ctx, {strokeStyle: o.stroke, lineWidth: o.width || 2});
        ctx.strokeRect(o.x, o.y, o.w, o.h);
      } else {
        Object.assign(ctx, {fillStyle: "#1b1b1f", textAlign: o.align || "left", textBaseline: "middle"});
        ctx.translate(o.x, o.y);
        if (o.rotate) { ctx.rotate(-Math.PI / 2); ctx.textAlign = "left"; }
        ctx.fillText(o.text, 0, 0);
      }
      ctx.restore();
    }
  }

  const esc = (t) => String(t).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]);
  const ANCHOR = {left: "start", right: "end", center: "middle"};

  // The same picture as an SVG document (images as embedded PNGs, each path one <path> element).
  function svg(view) {
    const parts = view.ops.map((o) => {
      if (o.op === "image") {
        return `<image x="${o.x}" y="${o.y}" width="${o.w}" height="${o.h}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${imageCanvas(o.pixels).toDataURL("image/png")}"/>`;
      }
      if (o.op === "path") {
        let d = "";
        for (let i = 0; i < o.d.length; i += 4) d += `M${o.d[i].toFixed(1)} ${o.d[i + 1].toFixed(1)}L${o.d[i + 2].toFixed(1)} ${o.d[i + 3].toFixed(1)}`;
        return `<path d="${d}" stroke="${o.stroke}" stroke-opacity="${o.alpha}" stroke-width="${o.width}" fill="none"/>`;
      }
      if (o.op === "rect") return `<rect x="${o.x}" y="${o.y}" width="${o.w}" height="${o.h}" stroke="${o.stroke}" stroke-width="${o.width || 2}" fill="none"/>`;
      const rotate = o.rotate ? ` transform="rotate(-90 ${o.x} ${o.y})"` : "";
      return `<text x="${o.x}" y="${o.y}" text-anchor="${o.rotate ? "start" : ANCHOR[o.align || "left"]}" dominant-baseline="middle"${rotate}>${esc(o.text)}</text>`;
    });
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${view.width}" height="${view.height}" font-family="monospace" font-size="11">` +
      `<rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>`;
  }

  // Put `view` on the page: a canvas, an overlay canvas for hover marks, `onHover(text)` and
  // `onClick(hit)`, with class `cls`; returns the stage element (its `canvas` is the picture).
  function mount(view, cls, onHover, onClick) {
    const stage = document.createElement("div"), base = document.createElement("canvas"), top = document.createElement("canvas");
    stage.setAttribute("class", `attn-stage ${cls}`);
    for (const c of [base, top]) { c.width = view.width; c.height = view.height; stage.appendChild(c); }
    base.setAttribute("class", "attn-canvas");
    top.setAttribute("class", "attn-overlay");
    const ctx = base.getContext("2d");
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, view.width, view.height);
    paint(ctx, view.ops);
    const at = (e) => { const r = top.getBoundingClientRect(); return view.hit(e.clientX - r.left, e.clientY - r.top); };
    top.addEventListener("mousemove", (e) => {
      const hit = at(e), octx = top.getContext("2d");
      octx.clearRect(0, 0, view.width, view.height);
      if (hit) paint(octx, view.overlay(hit));
      onHover(hit ? view.say(hit) : "", hit);
    });
    top.addEventListener("mouseleave", () => { top.getContext("2d").clearRect(0, 0, view.width, view.height); onHover("", null); });
    top.addEventListener("click", (e) => { const hit = at(e); if (hit && onClick) onClick(hit); });
    stage.canvas = base;
    return stage;
  }

  // Download `blob` as `name` (the page's export buttons).
  function download(blob, name) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  return {source, heatmap, headView, modelView, paint, svg, mount, download, headColour};
})();
