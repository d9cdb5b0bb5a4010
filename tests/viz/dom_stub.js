// A minimal DOM for running the attention views in Node (tests/viz/test_renderers.py): elements with
// children, attributes, classes, style and listeners; `document.body` collects what is rendered.
"use strict";

class Element {
  constructor(tag) {
    Object.assign(this, {tagName: tag.toUpperCase(), children: [], attributes: {}, style: {}, dataset: {}, listeners: {}, textContent: ""});
    const classes = new Set();
    this.classList = {add: (c) => classes.add(c), remove: (c) => classes.delete(c), contains: (c) => classes.has(c)};
  }
  setAttribute(key, value) { this.attributes[key] = String(value); if (key === "value") this.value = String(value); }
  appendChild(child) { this.children.push(child); if (this.tagName === "SELECT" && this.value === undefined) this.value = child.attributes.value; return child; }
  append(...nodes) { for (const n of nodes) this.appendChild(typeof n === "string" ? document.createTextNode(n) : n); }
  replaceChildren(...nodes) { this.children = []; this.append(...nodes); }
  addEventListener(kind, fn) { (this.listeners[kind] ||= []).push(fn); }
  querySelector(tag) { return this.all().find((e) => e.tagName === tag.toUpperCase()) || null; }
  all() { return this.children.flatMap((c) => [c, ...(c.all ? c.all() : [])]); }
  get className() { return this.attributes.class || ""; }
  // Canvas: a 2-D context that records the calls it gets (`ops`), and no pixels.
  getContext() { return (this.context ||= new Proxy({calls: []}, {get: (t, k) => (k in t ? t[k] : (...a) => { t.calls.push(k); return a; })})); }
  toDataURL() { return "data:image/png;base64,"; }
}

globalThis.ImageData = class { constructor(data, width, height) { Object.assign(this, {data, width, height}); } };

globalThis.document = {createElement: (tag) => new Element(tag), createElementNS: (ns, tag) => new Element(tag), createTextNode: (text) => ({textContent: text}), body: new Element("body")};

// One line of JSON per record: the classes of the rendered elements and the text shown.
globalThis.summarise = (root) => JSON.stringify({
  classes: [...new Set(root.all().flatMap((e) => (e.attributes ? (e.attributes.class || "").split(" ") : [])).filter(Boolean))].sort(),
  text: root.all().map((e) => e.textContent).filter(Boolean).join(" "),
  images: root.all().filter((e) => e.tagName === "IMG").map((e) => e.attributes.src.slice(0, 30)),
});
