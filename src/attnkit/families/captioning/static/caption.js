// The caption page: an uploaded or dropped image is downsized in the browser (the server's body
// limit), sent to POST /v1/caption with attention, and shown with its caption; hovering a word
// overlays that step's attention map (grid x grid, upsampled bilinearly) on the image.
"use strict";

const SIDE = 320;
Page.models("captioning");

function downsized(file) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => {
      const canvas = Object.assign(document.createElement("canvas"), {width: SIDE, height: SIDE});
      canvas.getContext("2d").drawImage(img, 0, 0, SIDE, SIDE);
      resolve(canvas.toDataURL("image/jpeg", 0.92));
    };
    img.onerror = () => reject(new Error(`${file.name}: not an image the browser can read`));
    img.src = URL.createObjectURL(file);
  });
}

function overlay(canvas, weights, grid) {
  const small = Object.assign(document.createElement("canvas"), {width: grid, height: grid});
  const ctx = small.getContext("2d"), pixels = ctx.createImageData(grid, grid);
  const top = Math.max(...weights) || 1;
  weights.forEach((w, i) => { pixels.data.set([0, 0, 0, Math.round(200 * (1 - w / top))], 4 * i); });
  ctx.putImageData(pixels, 0, 0);
  const big = canvas.getContext("2d");
  big.clearRect(0, 0, canvas.width, canvas.height);
  big.imageSmoothingEnabled = true;
  big.drawImage(small, 0, 0, canvas.width, canvas.height);
}

function render(container, result, src) {
  const card = document.createElement("section");
  card.className = "attn-card";
  const view = Object.assign(document.createElement("div"), {className: "cap-view"});
  const canvas = Object.assign(document.createElement("canvas"), {width: SIDE, height: SIDE});
  view.append(Object.assign(document.createElement("img"), {src, alt: result.name}), canvas);
  const caption = Object.assign(document.createElement("p"), {className: "attn-output cap-caption"});
  result.words.forEach((word, t) => {
    const span = Object.assign(document.createElement("span"), {className: "cap-word", textContent: word});
    span.addEventListener("mouseenter", () => { span.classList.add("on"); overlay(canvas, result.attention[t], result.grid); });
    span.addEventListener("mouseleave", () => { span.classList.remove("on"); canvas.getContext("2d").clearRect(0, 0, SIDE, SIDE); });
    caption.append(span, " ");
  });
  card.append(view, caption);
  container.appendChild(card);
}

async function send(file) {
  const status = document.getElementById("status");
  let src;
  try { src = await downsized(file); } catch (e) { status.textContent = e.message; return; }
  const beam = Number(document.getElementById("beam").value) || null;
  const body = {model: document.getElementById("model").value || null, texts: [file.name], images: [src], attention: true, beam};
  await Page.submit("/v1/caption", body, (container, result) => render(container, result, src));
}

document.getElementById("file").addEventListener("change", (e) => { if (e.target.files[0]) send(e.target.files[0]); });
const drop = document.getElementById("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); if (e.dataTransfer.files[0]) send(e.dataTransfer.files[0]); });
document.getElementById("caption-form").addEventListener("submit", (e) => e.preventDefault());
