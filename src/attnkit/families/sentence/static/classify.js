// The classify page: POST /v1/classify with attention, render label, probabilities and shaded words.
"use strict";

Page.models("classification");
document.getElementById("classify-form").addEventListener("submit", (event) => {
  event.preventDefault();
  Page.submit("/v1/classify", {model: document.getElementById("model").value || null, texts: Page.lines(), attention: true},
              AttnView.render);
});
