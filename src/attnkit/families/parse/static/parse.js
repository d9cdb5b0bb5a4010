// The parse page: POST /v1/parse with attention; draw the tree (server-made SVG) beside the maps.
"use strict";

Page.models("parsing");

function renderParse(container, record) {
  const card = document.createElement("section");
  card.className = "attn-card";
  const source = Object.assign(document.createElement("div"), {className: "attn-source", textContent: record.source});
  const picture = Object.assign(document.createElement("div"), {className: "attn-scroll"});
  picture.innerHTML = record.svg;  // markup made by attnkit.families.parse.draw (text escaped there)
  const text = Object.assign(document.createElement("div"), {className: "attn-output",
    textContent: record.tree + (record.repaired ? "  (repaired: cut at the step limit)" : "")});
  card.append(source, picture, text);
  if (record.maps) AttnView.renderMaps(card, record.maps);
  container.appendChild(card);
}

document.getElementById("parse-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const beam = Number(document.getElementById("beam").value) || null;
  Page.submit("/v1/parse", {model: document.getElementById("model").value || null, texts: Page.lines(), attention: true,
                            beam, raw: document.getElementById("raw").checked}, renderParse);
});
