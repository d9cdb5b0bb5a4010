// Attention views shared by the static report (inlined) and the web UI (served): plain JavaScript,
// no dependencies. A record is the common JSON of docs/explorer.md (source, text, note, n-best,
// maps; `attnkit.viz.records` writes it); `AttnView.render(container, record)` draws one as the
// common card (`card`). A model family whose records carry more sets `AttnView.extend(card, record)`
// in its renderer script (`Api.renderer`), which the card calls after its n-best list and before
// the maps; the core never asks which family a record comes from. Every kind in `maps` is drawn,
// under its `title` (its name when it has none): the page keeps no list of kinds.
"use strict";

const AttnView = (() => {
  const VIEWS = {heatmap: "heatmap", head: "head view", model: "model view"};
  const VIEW_CLASS = {heatmap: "attn-heatmap", head: "attn-headview", model: "attn-modelview"};

  function el(tag, attrs = {}, children = []) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) node.appendChild(child);
    return node;
  }

  function select(cls, options, label) {
    const s = el("select", {class: cls, "aria-label": label});
    for (const [value, text] of options) s.appendChild(el("option", {value, text}));
    return el("label", {}, [document.createTextNode(label + " "), s]);
  }

  // heads: [H][Tq][Tk] -> [Tq][Tk], the mean over heads.
  function meanOverHeads(heads) {
    return heads[0].map((row, i) => row.map((_, j) => heads.reduce((sum, h) => sum + h[i][j], 0) / heads.length));
  }

  // Background for a weight in [0, 1]: white to deep blue.
  function shade(w) {
    return `rgba(31, 90, 200, ${Math.max(0, Math.min(1, w)).toFixed(3)})`;
  }

  function tokenStrip(cls, tokens) {
    return el("div", {class: `attn-tokens ${cls}`}, tokens.map((t, i) => el("span", {class: "attn-token", "data-index": i, text: t})));
  }

  function setWeights(spans, weights) {
    spans.forEach((span, i) => {
      const w = weights ? weights[i] : 0;
      span.style.backgroundColor = weights ? shade(w) : "";
      span.style.color = w > 0.55 ? "#fff" : "";
      span.dataset.weight = weights ? w.toFixed(4) : "";
    });
  }

  const FIRST_KIND = "cross";  // the kind the view opens on when a record has it (as `plot --view`), else the first

  // A kind's name on the page: its title in the record, else its own name.
  function kindTitle(maps, kind) {
    return (maps && maps[kind] && maps[kind].title) || kind.replace(/_/g, " ");
  }

  // The interactive view of one record's maps: pick the kind, the view (heatmap, head view, model
  // view), the layer and the head. Short inputs also get token strips: hovering a query token shades
  // the key tokens by its row, hovering a key token shades the queries by its column. Each view can be
  // saved as PNG (the canvas) or SVG (the same drawing operations).
  function renderMaps(container, maps) {
    const kinds = Object.keys(maps).sort((a, b) => (b === FIRST_KIND) - (a === FIRST_KIND));
    const kindLabel = select("attn-kind", kinds.map((k) => [k, kindTitle(maps, k)]), "attention");
    const viewLabel = select("attn-view-pick", Object.entries(VIEWS), "view");
    const pickers = el("span", {class: "attn-pickers"});
    const topK = el("input", {class: "attn-topk", type: "number", min: "1", max: "50", value: "5", "aria-label": "lines per query"});
    const topLabel = el("label", {class: "attn-topk-label"}, [document.createTextNode("lines per query "), topK]);
    const body = el("div", {class: "attn-body"});
    container.appendChild(el("div", {class: "attn-view"}, [el("div", {class: "attn-controls"}, [kindLabel, viewLabel, pickers, topLabel]), body]));
    const kindInput = kindLabel.querySelector("select"), viewInput = viewLabel.querySelector("select");
    let layerInput, headInput, src;

    function buildPickers() {
      src = AttnDraw.source(maps[kindInput.value]);
      const heads = [...Array(src.H).keys()].map((h) => [String(h), `head ${h + 1}`]);
      const all = viewInput.value === "head" ? "all heads" : "mean over heads";
      const layerLabel = select("attn-layer", [...Array(src.L).keys()].map((l) => [String(l), `layer ${l + 1}`]), "layer");
      const headLabel = select("attn-head", heads.length > 1 ? [["mean", all], ...heads] : heads, "head");
      pickers.replaceChildren(...(viewInput.value === "model" ? [] : [layerLabel, headLabel]));
      layerInput = layerLabel.querySelector("select");
      layerInput.value = String(src.L - 1);  // the last layer first: where the alignment is plainest
      headInput = headLabel.querySelector("select");
      layerInput.addEventListener("change", draw);
      headInput.addEventListener("change", draw);
      topLabel.style.display = viewInput.value === "head" ? "" : "none";
    }

    function open(at) {  // a model-view thumbnail clicked: its heatmap
      viewInput.value = "heatmap";
      buildPickers();
      layerInput.value = String(at.l);
      headInput.value = String(at.h);
      draw();
    }

    function draw() {
      const layer = Number(layerInput.value), head = headInput.value, hover = el("div", {class: "attn-hover", text: "\u00a0"});
      let view, strips = [];
      if (viewInput.value === "model") view = AttnDraw.modelView(src);
      else if (viewInput.value === "head") {
        const heads = head === "mean" ? [...Array(src.H).keys()] : [Number(head)];
        view = AttnDraw.headView(src, layer, heads, Math.max(1, Number(topK.value) || 5));
      } else {
        const w = head === "mean" ? src.mean(layer) : src.get(layer, Number(head));
        view = AttnDraw.heatmap(src, w);
        if (Math.max(src.Tq, src.Tk) <= 200) strips = tokenStrips(src, w);
      }
      const stage = AttnDraw.mount(view, VIEW_CLASS[viewInput.value], (text) => { hover.textContent = text || "\u00a0"; }, viewInput.value === "model" ? open : null);
      const name = `attention-${kindInput.value}-${viewInput.value}` + (viewInput.value === "model" ? "" : `-layer${layer + 1}-${head === "mean" ? "all" : `head${Number(head) + 1}`}`);
      const png = el("button", {class: "attn-png", type: "button", text: "PNG"}), svg = el("button", {class: "attn-svg", type: "button", text: "SVG"});
      png.addEventListener("click", () => stage.canvas.toBlob((blob) => AttnDraw.download(blob, `${name}.png`), "image/png"));
      svg.addEventListener("click", () => AttnDraw.download(new Blob([AttnDraw.svg(view)], {type: "image/svg+xml"}), `${name}.svg`));
      body.replaceChildren(...strips, el("div", {class: "attn-scroll"}, [stage]), hover,
                           el("div", {class: "attn-export"}, [document.createTextNode("save as "), png, svg]), ...(view.vmax ? [legend(view.vmax)] : []));
    }

    // The query and key tokens as strips that shade each other on hover.
    function tokenStrips(m, w) {
      const keys = tokenStrip("attn-keys", m.cols), queries = tokenStrip("attn-queries", m.rows);
      const keySpans = [...keys.children], querySpans = [...queries.children];
      const row = (i) => Array.from(w.subarray(i * m.Tk, (i + 1) * m.Tk)), col = (j) => m.rows.map((_, i) => w[i * m.Tk + j]);
      querySpans.forEach((span, i) => hover(span, keySpans, () => row(i)));
      keySpans.forEach((span, j) => hover(span, querySpans, () => col(j)));
      return [el("div", {class: "attn-strip-label", text: "keys (attended to)"}), keys, el("div", {class: "attn-strip-label", text: "queries (attending)"}), queries];
    }

    kindInput.addEventListener("change", () => { buildPickers(); draw(); });
    viewInput.addEventListener("change", () => { buildPickers(); draw(); });
    topK.addEventListener("change", draw);
    buildPickers();
    draw();
  }

  // The colour scale: weight 0 (white) to the map's largest weight (deep blue).
  function legend(vmax) {
    const bar = el("span", {class: "attn-legend-bar"});
    bar.style.background = `linear-gradient(to right, ${shade(0)}, ${shade(1)})`;
    return el("div", {class: "attn-legend"}, [el("span", {text: "weight 0"}), bar, el("span", {text: vmax.toFixed(3)})]);
  }

  // Hovering `span` marks it and shades `others` by weights(); leaving clears them.
  function hover(span, others, weights) {
    span.addEventListener("mouseenter", () => { span.classList.add("attn-active"); setWeights(others, weights()); });
    span.addEventListener("mouseleave", () => { span.classList.remove("attn-active"); setWeights(others, null); });
  }

  const METHOD_NAMES = {ig: "integrated gradients", ixg: "input \u00d7 gradient"};

  // "cross/layer2" -> "encoder-decoder attention, layer 2 (head mean)"; "rollout" -> "attention rollout" (the titles
  // of the record's `maps`). Without a query row (`row` null: one output for every query, a classifier's hops) a
  // layer's row is the mean of its rows too.
  function comparedName(name, row, maps) {
    const [kind, layer] = name.split("/layer");
    const mean = row === null ? "mean over heads and queries" : "head mean";
    return layer ? `${kindTitle(maps, kind)}, layer ${layer} (${mean})` : kindTitle(maps, name);
  }

  // One row of per-token values as shaded cells: white to deep blue by |value| / the row's largest |value|.
  function heatRow(label, values, cls) {
    const vmax = values.reduce((a, v) => Math.max(a, Math.abs(v)), 0) || 1;
    const cells = values.map((v) => {
      const td = el("td", {class: "attn-cell", title: v.toFixed(4), "data-weight": v.toFixed(4)});
      td.style.backgroundColor = shade(Math.abs(v) / vmax);
      return td;
    });
    return el("tr", {class: cls}, [el("th", {class: "attn-row-label", text: label}), ...cells]);
  }

  // The attributions of one output (`record.attribution`, docs/explorer.md) beside the rows of attention
  // (each layer's head mean), rollout and flow that the same output reads, each row on its own scale,
  // and the table of Kendall's tau-b between each of those rows and |attributions| (computed in Python); `maps`
  // (the record's) name the rows.
  function renderAttribution(container, a, maps) {
    const methods = Object.keys(a.scores), names = a.compared ? a.compared.names : [];
    const ig = a.ig ? ` (integrated gradients: ${a.ig.steps} steps, complete within ${(100 * a.ig.relative_error).toFixed(2)}%)` : "";
    const head = el("tr", {}, [el("th", {}), ...a.tokens.map((t) => el("th", {class: "attn-col-token", text: t}))]);
    const rows = [...methods.map((m) => heatRow(METHOD_NAMES[m] || m, a.scores[m], "attn-attr-method")),
                  ...names.map((n, k) => heatRow(comparedName(n, a.row, maps), a.compared.rows[k], "attn-attr-compared"))];
    const parts = [el("div", {class: "attn-attr-title", text: `attributions of ${a.output}${ig}`}),
                   el("div", {class: "attn-scroll"}, [el("table", {class: "attn-attr-rows"}, [head, ...rows])])];
    if (a.tau) {
      const th = [el("th", {text: "compared with |attributions|"}), ...methods.map((m) => el("th", {text: `Kendall \u03c4 (${METHOD_NAMES[m] || m})`}))];
      const body = names.map((n, k) => el("tr", {"data-name": n}, [el("td", {text: comparedName(n, a.row, maps)}),
        ...methods.map((m) => el("td", {class: "attn-tau-value", text: a.tau[m][k] === null ? "\u2014" : a.tau[m][k].toFixed(3)}))]));
      parts.push(el("table", {class: "attn-tau"}, [el("tr", {}, th), ...body]));
    }
    container.appendChild(el("div", {class: "attn-attribution"}, parts));
  }

  // A record's card: its source, its output, its note (what the maps do not show: a classifier's class and
  // probabilities), the n-best list with scores (when it has one), what the family's `AttnView.extend(card,
  // record)` adds (its picture of the output: a tree, an image, class bars), then the attention view of its
  // maps and, with attributions, their view and tau table.
  function card(container, record) {
    const section = el("section", {class: "attn-card"});
    section.appendChild(el("div", {class: "attn-source", text: record.source}));
    if (record.text) section.appendChild(el("div", {class: "attn-output", text: record.text}));
    if (record.note) section.appendChild(el("div", {class: "attn-note", text: record.note}));
    if (record.nbest) {
      const nbest = el("ol", {class: "attn-nbest"});
      for (const h of record.nbest) {
        nbest.appendChild(el("li", {}, [el("span", {class: "attn-score", text: h.score.toFixed(3)}),
                                        el("span", {text: (h.text || "(empty)") + (h.finished ? "" : " \u2026 (cut at max length)")})]));
      }
      section.appendChild(el("details", {}, [el("summary", {text: `${record.nbest.length}-best list`}), nbest]));
    }
    api.extend(section, record);
    if (record.maps) renderMaps(section, record.maps);
    if (record.attribution) renderAttribution(section, record.attribution, record.maps);
    container.appendChild(section);
    return section;
  }

  const api = {el, select, meanOverHeads, shade, tokenStrip, setWeights, renderMaps, renderAttribution, card, render: card, extend: () => {}};
  return api;
})();
