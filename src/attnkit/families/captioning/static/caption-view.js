// How a caption shows on the report (`AttnView.extend`): the common card with the attention figure
// over the image: the input image, then one panel per output word, the image with that word's
// attention overlaid (record.image, record.overlays[t].src: data URIs made by the family, so the
// report stays offline).
"use strict";

(() => {
  const {el} = AttnView;

  function renderOverlays(container, record) {
    const panel = (src, word, cls) => el("figure", {class: `attn-panel ${cls}`}, [el("img", {src, alt: word}), el("figcaption", {text: word})]);
    const strip = el("div", {class: "attn-overlays"}, [panel(record.image, "input", "attn-input")]);
    for (const o of record.overlays) strip.appendChild(panel(o.src, o.word, "attn-word"));
    container.appendChild(strip);
  }

  AttnView.extend = (card, record) => { if (record.overlays) renderOverlays(card, record); };
})();
