// Attention views shared by the static report (inlined) and the web UI (served): plain JavaScript,
// no dependencies. Records are the JSON of attnkit.viz.explore.record (translation), of the
// classify API (label, probs, tokens, attention per hop), and of a family whose output is text
// about an image (also an input image and per-word overlays as data URIs), and of a parser (also the
// tree drawn as SVG).
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

  // An attention figure over an image (a captioner's record): the input image, then one panel per
  // output word, the image with that word's attention overlaid (record.image, record.overlays[t].src:
  // data URIs made by the family, so the report stays offline).
  function renderOverlays(container, record) {
    const panel = (src, word, cls) => el("figure", {class: `attn-panel ${cls}`}, [el("img", {src, alt: word}), el("figcaption", {text: word})]);
    const strip = el("div", {class: "attn-overlays"}, [panel(record.image, "input", "attn-input")]);
    for (const o of record.overlays) strip.appendChild(panel(o.src, o.word, "attn-word"));
    container.appendChild(strip);
  }

  // A parse's tree drawing (record.svg, the family's SVG markup) as an image: a data URI, so no markup
  // of the record enters the page itself and the report stays offline.
  function renderTree(record) {
    const src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(record.svg);
    return el("figure", {class: "attn-tree"}, [el("img", {src, alt: record.text})]);
  }

  // One translated sentence (or parse): source, output, n-best list with scores, the tree drawing of a
  // parse, attention view.
  function renderTranslation(container, record) {
    const card = el("section", {class: "attn-card"});
    card.appendChild(el("div", {class: "attn-source", text: record.source}));
    card.appendChild(el("div", {class: "attn-output", text: record.text}));
    const nbest = el("ol", {class: "attn-nbest"});
    for (const h of record.nbest) {
      nbest.appendChild(el("li", {}, [el("span", {class: "attn-score", text: h.score.toFixed(3)}),
                                      el("span", {text: (h.text || "(empty)") + (h.finished ? "" : " \u2026 (cut at max length)")})]));
    }
    card.appendChild(el("details", {}, [el("summary", {text: `${record.nbest.length}-best list`}), nbest]));
    if (record.svg) card.appendChild(renderTree(record));
    if (record.overlays) renderOverlays(card, record);
    if (record.maps) renderMaps(card, record.maps);
    container.appendChild(card);
  }

  // One classified text: label, probabilities, the tokens shaded by one hop or the hop average.
  function renderClassification(container, record) {
    const card = el("section", {class: "attn-card"});
    card.appendChild(el("div", {class: "attn-source", text: record.text}));
    card.appendChild(el("div", {class: "attn-output", text: record.label}));
    const probs = el("ul", {class: "attn-probs"});
    for (const [label, p] of Object.entries(record.probs).sort((a, b) => b[1] - a[1])) {
      const bar = el("span", {class: "attn-bar"});
      bar.style.width = `${(100 * p).toFixed(1)}%`;
      probs.appendChild(el("li", {}, [el("span", {class: "attn-score", text: p.toFixed(3)}), el("span", {text: label}), bar]));
    }
    card.appendChild(probs);
    if (record.attention && record.attention.length) {  // [] without attention pooling
      const hops = record.attention;
      const picker = select("attn-hop", [["mean", "mean over hops"], ...hops.map((_, r) => [String(r), `hop ${r + 1}`])], "hop");
      const strip = tokenStrip("attn-keys", record.tokens);
      const input = picker.querySelector("select");
      const draw = () => {
        const weights = input.value === "mean" ? meanOverHeads(hops.map((h) => [h]))[0] : hops[Number(input.value)];
        const top = Math.max(...weights) || 1;
        setWeights([...strip.children], weights.map((w) => w / top));
      };
      input.addEventListener("change", draw);
      card.append(el("div", {class: "attn-controls"}, [picker]), strip);
      draw();
    }
    container.appendChild(card);
  }

  return {renderTranslation, renderClassification, renderMaps, renderOverlays};
})();
