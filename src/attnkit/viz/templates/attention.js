// Attention views shared by the static report (inlined) and the web UI (served): plain JavaScript,
// no dependencies. A record is the common JSON of docs/explorer.md (source, text, n-best,
// maps); `AttnView.render(container, record)` draws one as a card (`card`). A model family whose
// records carry more sets `AttnView.render` in its renderer script (`Api.renderer`), built from the
// helpers returned here; the core never asks which family a record comes from.
"use strict";

const AttnView = (() => {
  const KIND_NAMES = {cross: "encoder-decoder attention", encoder: "encoder self-attention", decoder_self: "decoder self-attention"};

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

  // The interactive view of one sentence's maps: selectors, token strips and a heatmap. Hovering a
  // query token shades the key tokens by its row; hovering a key token shades the queries by its column.
  function renderMaps(container, maps) {
    const kinds = Object.keys(KIND_NAMES).filter((k) => maps[k]);
    const kindLabel = select("attn-kind", kinds.map((k) => [k, KIND_NAMES[k]]), "attention");
    const pickers = el("span", {class: "attn-pickers"});
    const body = el("div", {class: "attn-body"});
    container.appendChild(el("div", {class: "attn-view"}, [el("div", {class: "attn-controls"}, [kindLabel, pickers]), body]));
    const kindInput = kindLabel.querySelector("select");
    let layerInput, headInput;

    function buildPickers() {
      const layers = maps[kindInput.value].layers;
      const heads = layers[0].map((_, h) => [String(h), `head ${h + 1}`]);
      const layerLabel = select("attn-layer", layers.map((_, l) => [String(l), `layer ${l + 1}`]), "layer");
      const headLabel = select("attn-head", heads.length > 1 ? [["mean", "mean over heads"], ...heads] : heads, "head");
      pickers.replaceChildren(layerLabel, headLabel);
      layerInput = layerLabel.querySelector("select");
      layerInput.value = String(layers.length - 1);  // the last layer first: where the alignment is plainest
      headInput = headLabel.querySelector("select");
      layerInput.addEventListener("change", draw);
      headInput.addEventListener("change", draw);
    }

    function draw() {
      const m = maps[kindInput.value];
      const layer = m.layers[Number(layerInput.value)];
      const weights = headInput.value === "mean" ? meanOverHeads(layer) : layer[Number(headInput.value)];
      const keys = tokenStrip("attn-keys", m.cols), queries = tokenStrip("attn-queries", m.rows);
      const keySpans = [...keys.children], querySpans = [...queries.children];
      querySpans.forEach((span, i) => hover(span, keySpans, () => weights[i]));
      keySpans.forEach((span, j) => hover(span, querySpans, () => weights.map((row) => row[j])));
      body.replaceChildren(el("div", {class: "attn-strip-label", text: "keys (attended to)"}), keys,
                           el("div", {class: "attn-strip-label", text: "queries (attending)"}), queries,
                           heatmap(m.rows, m.cols, weights, querySpans, keySpans), legend());
    }

    kindInput.addEventListener("change", () => { buildPickers(); draw(); });
    buildPickers();
    draw();
  }

  // The colour scale: weight 0 (white) to 1 (deep blue).
  function legend() {
    const bar = el("span", {class: "attn-legend-bar"});
    bar.style.background = `linear-gradient(to right, ${shade(0)}, ${shade(1)})`;
    return el("div", {class: "attn-legend"}, [el("span", {text: "weight 0"}), bar, el("span", {text: "1"})]);
  }

  // Hovering `span` marks it and shades `others` by weights(); leaving clears them.
  function hover(span, others, weights) {
    span.addEventListener("mouseenter", () => { span.classList.add("attn-active"); setWeights(others, weights()); });
    span.addEventListener("mouseleave", () => { span.classList.remove("attn-active"); setWeights(others, null); });
  }

  // A table heatmap: rows = queries, columns = keys; hovering a cell marks its two tokens.
  function heatmap(rows, cols, weights, querySpans, keySpans) {
    const table = el("table", {class: "attn-heatmap"});
    const head = el("tr", {}, [el("th")]);
    cols.forEach((c) => head.appendChild(el("th", {class: "attn-col", text: c})));
    table.appendChild(head);
    weights.forEach((row, i) => {
      const tr = el("tr", {}, [el("th", {class: "attn-row", text: rows[i]})]);
      row.forEach((w, j) => {
        const td = el("td", {title: `${rows[i]} \u2192 ${cols[j]}: ${w.toFixed(3)}`});
        td.style.backgroundColor = shade(w);
        td.addEventListener("mouseenter", () => { querySpans[i].classList.add("attn-active"); keySpans[j].classList.add("attn-active"); });
        td.addEventListener("mouseleave", () => { querySpans[i].classList.remove("attn-active"); keySpans[j].classList.remove("attn-active"); });
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    return el("div", {class: "attn-scroll"}, [table]);
  }

  // A record's card: its source, its output, the n-best list with scores (when it has one), what
  // `extra(card)` adds (a family's picture of the output), then the attention view of its maps.
  function card(container, record, extra) {
    const section = el("section", {class: "attn-card"});
    section.appendChild(el("div", {class: "attn-source", text: record.source}));
    section.appendChild(el("div", {class: "attn-output", text: record.text}));
    if (record.nbest) {
      const nbest = el("ol", {class: "attn-nbest"});
      for (const h of record.nbest) {
        nbest.appendChild(el("li", {}, [el("span", {class: "attn-score", text: h.score.toFixed(3)}),
                                        el("span", {text: (h.text || "(empty)") + (h.finished ? "" : " \u2026 (cut at max length)")})]));
      }
      section.appendChild(el("details", {}, [el("summary", {text: `${record.nbest.length}-best list`}), nbest]));
    }
    if (extra) extra(section);
    if (record.maps) renderMaps(section, record.maps);
    container.appendChild(section);
    return section;
  }

  return {el, select, meanOverHeads, shade, tokenStrip, setWeights, renderMaps, card, render: card};
})();
