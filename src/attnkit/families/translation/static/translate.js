// The translate page: POST /v1/translate with attention, render each result with AttnView.render (the common card).
"use strict";

Page.models("translation").then((models) => {
  const picker = document.getElementById("model");
  const defaults = () => {
    const m = models[picker.value];
    if (m) { document.getElementById("beam").value = m.beam; document.getElementById("alpha").value = m.alpha; }
  };
  picker.addEventListener("change", defaults);
  defaults();
});
document.getElementById("translate-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const number = (id) => (document.getElementById(id).value === "" ? null : Number(document.getElementById(id).value));
  Page.submit("/v1/translate", {
    model: document.getElementById("model").value || null, texts: Page.lines(), attention: true,
    beam: number("beam"), alpha: number("alpha"), words: document.getElementById("words").checked,
  }, AttnView.render);
});
