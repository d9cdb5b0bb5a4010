// How a parse shows on the report (`AttnView.render`): the common card with the tree drawn under its
// bracketed form. The drawing (record.svg, made by `families.parse.draw`) loads as an image from a
// data URI, so no markup of the record enters the page itself and the report stays offline.
"use strict";

(() => {
  function renderTree(record) {
    const src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(record.svg);
    return AttnView.el("figure", {class: "attn-tree"}, [AttnView.el("img", {src, alt: record.text})]);
  }

  AttnView.render = (container, record) => AttnView.card(container, record, (card) => { if (record.svg) card.appendChild(renderTree(record)); });
})();
