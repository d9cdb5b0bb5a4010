// The /long page: POST /v1/long reads a document through a Hugging Face decoder (the server keeps its
// queries and keys: GET /v1/long says how long), then the page (long-view.js) zooms into it, asking
// POST /v1/long/tile for the finer pooled levels and the exact tiles. A tile of a document the server
// has evicted (410) reads the document again, once, and asks again.
"use strict";

(async () => {
  const kept = await (await fetch("/v1/long")).json(), picker = document.getElementById("model");
  for (const name of kept.models) picker.appendChild(Object.assign(document.createElement("option"), {value: name, textContent: name}));
  document.getElementById("keeps").textContent = kept.keeps;
})();

document.getElementById("file").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (file) document.getElementById("document").value = await file.text();
});

async function post(url, body) {
  const response = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  return {response, data: await response.json()};
}

// Tiles from the server for the document `read` posted; an evicted (410) or unknown (404) one is posted again.
function serverTiles(first, read) {
  let id = first;
  async function tile(body) {
    for (let again = false; ; again = true) {
      const {response, data} = await post("/v1/long/tile", {...body, document: id, head: body.head === "mean" ? null : Number(body.head)});
      if (response.ok) return Float32Array.from(data.values.flat());
      if (again || (response.status !== 410 && response.status !== 404)) throw new Error(`error ${response.status}: ${data.detail}`);
      id = (await read()).document;
    }
  }
  return {
    exact: (layer, head, sink, q0, q1, k0, k1) => tile({layer, head, sink, level: 1, q0, q1, k0, k1}),
    pooled: (level, layer, head, sink, q0, q1, k0, k1) => tile({layer, head, sink, level, q0, q1, k0, k1}),
  };
}

document.getElementById("long-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = {model: document.getElementById("model").value || null, document: document.getElementById("document").value,
                window: Number(document.getElementById("window").value) || 64};
  const status = document.getElementById("status"), results = document.getElementById("results");
  status.textContent = "reading\u2026";
  const read = async () => {
    const {response, data} = await post("/v1/long", body);
    if (!response.ok) throw new Error(`error ${response.status}: ${data.detail}`);
    return data;
  };
  let data;
  try {
    data = await read();
  } catch (e) {
    status.textContent = e.message;
    return;
  }
  results.replaceChildren();
  AttnLong.render(results, data.record, serverTiles(data.document, read));
  status.textContent = `${data.tokens.toLocaleString("en-US")} tokens read by ${data.model}${data.cached ? " (kept from before)" : ""}`;
});
