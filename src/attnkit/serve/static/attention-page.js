// The attention page: POST /v1/attention for any served source (an attnkit run or a Hugging Face
// model) and draw the record with the shared views (heatmap, head view, model view; with attributions,
// their view and Kendall tau table). For a run, its training curves too (GET /v1/models/{name}/metrics).
"use strict";

// The picked source's training curves (a run's; a Hugging Face model has none), or the server's one line
// (no metrics yet: `note`; a corrupt line: the 422's `detail`).
async function showCurves(source) {
  const box = document.getElementById("curves");
  box.replaceChildren();
  if (!source || source.type !== "run") return;
  const response = await fetch(`/v1/models/${encodeURIComponent(source.name)}/metrics`);
  const data = await response.json();
  if (data.curves) AttnCurves.draw(box, [data.curves]);
  else box.appendChild(Object.assign(document.createElement("p"), {className: "attn-curves-source", textContent: `training curves: ${data.note || data.detail}`}));
}

(async () => {
  const sources = await (await fetch("/v1/sources")).json(), picker = document.getElementById("model");
  for (const s of sources) picker.appendChild(Object.assign(document.createElement("option"), {value: s.name, textContent: `${s.name} (${s.type})`}));
  const byName = Object.fromEntries(sources.map((s) => [s.name, s]));
  picker.addEventListener("change", () => showCurves(byName[picker.value]));
  await showCurves(byName[picker.value]);
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
