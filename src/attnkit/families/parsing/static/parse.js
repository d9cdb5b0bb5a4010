// The parse page: POST /v1/parse with attention; draw each parse as the report does: the common card with
// the family's renderer (parse-view.js: the tree, server-made SVG, and the span chart) and the maps.
"use strict";

Page.models("parsing");

document.getElementById("parse-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const beam = Number(document.getElementById("beam").value) || null;
  Page.submit("/v1/parse", {model: document.getElementById("model").value || null, texts: Page.lines(), attention: true,
                            beam, raw: document.getElementById("raw").checked}, AttnView.render);
});
