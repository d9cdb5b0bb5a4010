// Helpers shared by every family's page (the template serve/static/page.html loads this script).
"use strict";

const Page = {
  // Fill the model picker with the loaded models of `task`; returns their info by name.
  async models(task) {
    const models = (await (await fetch("/v1/models")).json()).filter((m) => m.task === task);
    const picker = document.getElementById("model");
    for (const m of models) picker.appendChild(Object.assign(document.createElement("option"), {value: m.name, textContent: m.name}));
    return Object.fromEntries(models.map((m) => [m.name, m]));
  },

  // POST `body` to `url`; on success render each result, else show the server's one-line detail.
  async submit(url, body, render) {
    const status = document.getElementById("status"), results = document.getElementById("results");
    status.textContent = "working\u2026";
    const response = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    const data = await response.json();
    if (!response.ok) { status.textContent = `error ${response.status}: ${data.detail}`; return; }
    results.replaceChildren();
    for (const result of data.results) render(results, result);
    status.textContent = `${data.results.length} done by ${data.model}`;
  },

  lines() {
    return document.getElementById("text").value.split("\n").map((l) => l.trim()).filter((l) => l);
  },
};
