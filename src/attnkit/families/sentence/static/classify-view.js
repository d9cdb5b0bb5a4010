// How a classified text shows on the report and the classify page (`AttnView.render`): the text,
// the label, the class probabilities as bars, and the tokens shaded by one attention hop or the
// mean over hops; with the report's `maps` (the hops as a kind), the shared views of them (heatmap,
// head view, model view) and, with `attribution`, the attributions beside the hops and their tau.
"use strict";

(() => {
  const {el, select, tokenStrip, setWeights, meanOverHeads} = AttnView;

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
    if (record.maps) AttnView.renderMaps(card, record.maps);
    if (record.attribution) AttnView.renderAttribution(card, record.attribution);
    container.appendChild(card);
  }

  AttnView.render = renderClassification;
})();
