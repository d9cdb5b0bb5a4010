// How a classified text shows on the report and the classify page (`AttnView.extend`): the common card
// (the text, its class, the note) with the class probabilities as bars and the words shaded by one
// attention hop or the mean over hops (the record's `maps.hops`, drawn below by the shared views too).
"use strict";

(() => {
  const {el, select, tokenStrip, setWeights} = AttnView;

  function renderProbs(card, probs) {
    const list = el("ul", {class: "attn-probs"});
    for (const [label, p] of Object.entries(probs).sort((a, b) => b[1] - a[1])) {
      const bar = el("span", {class: "attn-bar"});
      bar.style.width = `${(100 * p).toFixed(1)}%`;
      list.appendChild(el("li", {}, [el("span", {class: "attn-score", text: p.toFixed(3)}), el("span", {text: label}), bar]));
    }
    card.appendChild(list);
  }

  // The words shaded by a hop (R x n: one layer of one head), or by the mean over hops, each on its own scale.
  function renderHops(card, hops) {
    const src = AttnDraw.source(hops), weights = src.get(0, 0), n = src.Tk;
    const row = (r) => Array.from(weights.subarray(r * n, (r + 1) * n));
    const mean = () => src.cols.map((_, j) => src.rows.reduce((sum, _r, r) => sum + weights[r * n + j], 0) / src.Tq);
    const picker = select("attn-hop", [["mean", "mean over hops"], ...src.rows.map((label, r) => [String(r), label])], "hop");
    const strip = tokenStrip("attn-keys attn-hop-words", src.cols), input = picker.querySelector("select");
    const draw = () => {
      const w = input.value === "mean" ? mean() : row(Number(input.value));
      const top = Math.max(...w) || 1;
      setWeights([...strip.children], w.map((x) => x / top));
    };
    input.addEventListener("change", draw);
    card.append(el("div", {class: "attn-controls"}, [picker]), strip);
    draw();
  }

  AttnView.extend = (card, record) => {
    if (record.probs) renderProbs(card, record.probs);
    if (record.maps && record.maps.hops) renderHops(card, record.maps.hops);
  };
})();
