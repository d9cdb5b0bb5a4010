// The attention page: POST /v1/attention for any served source (an attnkit run or a Hugging Face
// model) and draw the record with the shared views (heatmap, head view, model view; with attributions,
// their view and Kendall tau table).
"use strict";

(async () => {
  const sources = await (await fetch("/v1/sources")).json(), picker = document.getElementById("model");
  for (const s of sources) picker.appendChild(Object.assign(document.createElement("option"), {value: s.name, textContent: `${s.name} (${s.type})`}));
})();

document.getElementById("attention-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const value = (id) => document.getElementById(id).value.trim();
  const body = {model: value("model") || null, text: value("text"), target: value("target") || null,
                words: document.getElementById("words").checked, flow: value("flow") || false,
                attribute: ["ixg", "ig"].filter((m) => document.getElementById(`attr-${m}`).checked),
                output: value("output") === "" ? null : Number(value("output"))};
  const status = document.getElementById("status"), results = document.getElementById("results");
  status.textContent = "working\u2026";
  const response = await fetch("/v1/attention", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const data = await response.json();
  if (!response.ok) { status.textContent = `error ${response.status}: ${data.detail}`; return; }
  results.replaceChildren();
  AttnView.card(results, data.record);
  status.textContent = `done by ${data.model}`;
});
