// The classify page: POST /v1/classify with attention, and draw each result as the report does: the
// common card with the family's renderer (classify-view.js), from the result made into a record.
"use strict";

// A /v1/classify result ({text, label, probs, tokens, attention [hop][token]}) as the common record.
function classifyRecord(result) {
  const record = {id: result.id, source: result.text, text: result.label, probs: result.probs};
  if (result.attention && result.attention.length) {  // [] without attention pooling
    const rows = result.attention.map((_, r) => `hop ${r + 1}`);
    record.maps = {hops: {title: "attention hops", role: "readout", rows, cols: result.tokens, layers: [[result.attention]]}};
  }
  return record;
}

Page.models("classification");
document.getElementById("classify-form").addEventListener("submit", (event) => {
  event.preventDefault();
  Page.submit("/v1/classify", {model: document.getElementById("model").value || null, texts: Page.lines(), attention: true},
              (container, result) => AttnView.render(container, classifyRecord(result)));
});
