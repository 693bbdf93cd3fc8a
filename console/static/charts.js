// Charts as SVG, drawn by our own code: a sparkline and a line chart with axes.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return el;
}

function scale(values, lo, hi) {
  let min = Math.min(...values), max = Math.max(...values);
  if (!isFinite(min)) { min = 0; max = 1; }
  if (min === max) { min = Math.min(0, min); max = max === 0 ? 1 : max * 1.1; }
  return v => hi - (v - min) / (max - min) * (hi - lo);
}

// The smallest of 4 × (1, 2 or 5 × 10^n) at or above v: axis ticks at round numbers.
function niceCeiling(v) {
  if (!(v > 0)) return 4;
  const step = Math.pow(10, Math.floor(Math.log10(v / 4)));
  for (const m of [1, 2, 2.5, 5, 10]) if (4 * m * step >= v) return 4 * m * step;
  return 40 * step;
}

// points: [[t, value], ...]; an empty line when there are fewer than two.
function sparkline(points, width = 120, height = 24) {
  const svg = svgEl("svg", {class: "spark", width, height, viewBox: `0 0 ${width} ${height}`});
  if (points.length < 2) {
    svg.appendChild(svgEl("line", {x1: 0, x2: width, y1: height - 2, y2: height - 2, stroke: "#dde2e8"}));
    return svg;
  }
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  const y = scale(points.map(p => p[1]), 2, height - 2);
  const x = t => (t1 === t0 ? 0 : (t - t0) / (t1 - t0) * (width - 2)) + 1;
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
  svg.appendChild(svgEl("path", {d, fill: "none", stroke: "#2463eb", "stroke-width": 1.5}));
  return svg;
}

// series: [{name, points: [[t (s), value], ...], color}]; times on the x axis, values on the y axis.
function lineChart(series, {width = 720, height = 220, label = ""} = {}) {
  const pad = {l: 52, r: 12, t: 12, b: 26};
  const svg = svgEl("svg", {class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                            "aria-label": label});
  const all = series.flatMap(s => s.points);
  svg.appendChild(svgEl("rect", {x: pad.l, y: pad.t, width: width - pad.l - pad.r, height: height - pad.t - pad.b,
                                 fill: "#fff", stroke: "#dde2e8"}));
  if (all.length === 0) {
    const t = svgEl("text", {x: width / 2, y: height / 2, "text-anchor": "middle"});
    t.textContent = "no samples yet";
    svg.appendChild(t);
    return svg;
  }
  const ts = all.map(p => p[0]), vs = all.map(p => p[1]);
  const tMin = Math.min(...ts), tMax = Math.max(...ts);
  const vMax = niceCeiling(Math.max(...vs));
  const x = t => pad.l + (tMax === tMin ? 0.5 : (t - tMin) / (tMax - tMin)) * (width - pad.l - pad.r);
  const y = v => height - pad.b - v / vMax * (height - pad.t - pad.b);
  for (let i = 0; i <= 4; i++) {
    const v = vMax * i / 4, yy = y(v);
    svg.appendChild(svgEl("line", {x1: pad.l, x2: width - pad.r, y1: yy, y2: yy, stroke: "#eef1f4"}));
    const t = svgEl("text", {x: pad.l - 6, y: yy + 3, "text-anchor": "end"});
    t.textContent = Number.isInteger(v) ? v : v.toFixed(1);
    svg.appendChild(t);
  }
  for (const t of [tMin, tMax]) {
    const txt = svgEl("text", {x: x(t), y: height - 8, "text-anchor": t === tMin ? "start" : "end"});
    txt.textContent = new Date(t * 1000).toLocaleTimeString();
    svg.appendChild(txt);
  }
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    const path = svgEl("path", {d, fill: "none", stroke: s.color || "#2463eb", "stroke-width": 2});
    path.dataset.series = s.name;
    path.dataset.points = s.points.length;
    path.dataset.last = s.points[s.points.length - 1][1];
    svg.appendChild(path);
  }
  return svg;
}
