// How a parse shows on the report and the parse page (`AttnView.extend`): the common card with the tree
// drawn under its bracketed form (and a line when the parse was repaired: cut at the step limit). The drawing (record.svg, made by `families.parsing.draw`) loads as an image from a
// data URI, so no markup of the record enters the page itself and the report stays offline.
// A chart parse (record.chart) also shows its span chart: row i, column j is the span of words
// i..j, shaded by how much its best label's score beats the empty label's (sigmoid of the
// difference), outlined and labelled where the span is a constituent of the parse.
"use strict";

(() => {
  function renderTree(record) {
    const src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(record.svg);
    return AttnView.el("figure", {class: "attn-tree"}, [AttnView.el("img", {src, alt: record.text})]);
  }

  function renderChart(chart) {
    const el = AttnView.el, inTree = new Set(chart.in_tree.map(([i, j]) => `${i},${j}`));
    const head = el("tr", {}, [el("th", {text: "from \\ to"}), ...chart.words.map((w) => el("th", {text: w}))]);
    const rows = chart.words.map((word, i) => el("tr", {}, [el("th", {text: word}), ...chart.best[i].map((score, j) => {
      if (score === null) return el("td", {});
      const label = chart.labels[i][j], member = inTree.has(`${i},${j}`);
      const cell = el("td", {title: `${chart.words.slice(i, j + 1).join(" ")}: ${label} ${score.toFixed(3)}`, text: member ? label : ""});
      cell.style.backgroundColor = AttnView.shade(1 / (1 + Math.exp(-score)));
      if (member) cell.style.outline = "2px solid #e07a10";
      return cell;
    })]));
    const table = el("table", {class: "attn-chart"}, [el("tbody", {}, [head, ...rows])]);
    table.style.borderCollapse = "collapse";
    table.style.fontSize = "12px";
    return el("details", {open: ""}, [el("summary", {text: "span chart: best label score per span (outlined: the parse's constituents)"}),
                                      el("div", {class: "attn-scroll"}, [table])]);
  }

  AttnView.extend = (card, record) => {
    if (record.repaired) card.appendChild(AttnView.el("div", {class: "attn-note", text: "repaired: cut at the step limit"}));
    if (record.svg) card.appendChild(renderTree(record));
    if (record.chart) card.appendChild(renderChart(record.chart));
  };
})();
