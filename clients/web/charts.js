// charts.js — draws the answers that are not lanes: a histogram as a bar chart of its counts
// with the bin edges on the axis and the in-range / out-of-range totals, and a reduce_by_key job as the
// runs of equal keys over the input, each with its reduced value. SVG, like diagram.js.
//
// Every bar carries data-bin, data-count, data-lo, data-hi, every edge label data-edge, every run
// data-run, data-key, data-start, data-end, data-value: tests and screen readers read what is drawn.

import { fmtValue, fullValue } from './util.js';
import { keyRuns } from './datafields.js';

const NS = 'http://www.w3.org/2000/svg';
const RUN_FILLS = ['#dbeafe', '#fee2e2', '#dcfce7', '#fef3c7', '#ede9fe', '#fce7f3', '#cffafe', '#ffedd5'];
const RUN_STROKES = ['#1d4ed8', '#b91c1c', '#15803d', '#a16207', '#6d28d9', '#be185d', '#0e7490', '#c2410c'];
const MAX_ELEMS = 96; // elements drawn of a reduce_by_key input; the table has every run
const MAX_BARS = 512; // bars drawn of a histogram
const MAX_ROWS = 1024; // table rows of a histogram

function el(name, attrs = {}, parent = null, text = null) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
const esc = (s) => String(s).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]));
/** A label squeezed into `w` pixels when it is longer than fits. */
function fit(t, s, w, px) {
  if (s.length * px * 0.6 > w) t.setAttribute('textLength', Math.max(4, w - 2)), t.setAttribute('lengthAdjust', 'spacingAndGlyphs');
  return t;
}

/** resp: {counts: ["12", ...], in_range, out_of_range, edges: [bins+1 numbers]}. Past MAX_BARS bins, a bar
 *  stands for `per` neighbouring bins (data-bins) and the table lists the bins that counted something. */
export function renderHistogram(resp, body) {
  const counts = (resp.counts || []).map(Number);
  const B = counts.length;
  const [rlo, rhi] = body.range || [0, 1]; // numpy's edges, should an answer leave them out
  const edges = resp.edges || Array.from({ length: B + 1 }, (_, i) => rlo + ((rhi - rlo) * i) / B);
  const per = Math.max(1, Math.ceil(B / MAX_BARS));
  const D = Math.ceil(B / per); // bars drawn
  const bins = Array.from({ length: D }, (_, j) => {
    const start = j * per, end = Math.min(B, start + per);
    let c = 0;
    for (let i = start; i < end; i++) c += counts[i];
    return { start, end, count: per === 1 ? resp.counts[j] : String(c), c };
  });
  const pitch = D <= 8 ? 56 : D <= 32 ? 28 : Math.max(1, 640 / D);
  const L = 48, T = 18, H = 150, PW = D * pitch;
  const W = L + PW + 24;
  const max = Math.max(1, ...bins.map((b) => b.c));
  const svg = el('svg', { xmlns: NS, class: 'chart histogram', role: 'img', width: W, height: T + H + 26, viewBox: `0 0 ${W} ${T + H + 26}` });
  el('text', { x: L - 6, y: T + 4, 'text-anchor': 'end', class: 'axis-label' }, svg, String(max));
  el('text', { x: L - 6, y: T + H + 4, 'text-anchor': 'end', class: 'axis-label' }, svg, '0');
  el('text', { x: 2, y: T + H / 2, class: 'row-label' }, svg, 'count');
  const bars = el('g', { class: 'bars' }, svg);
  const gap = pitch > 3 ? 1 : 0;
  bins.forEach((b, j) => {
    const h = (b.c / max) * H;
    const x = L + j * pitch;
    const lo = edges[b.start], hi = edges[b.end];
    const g = el('g', { class: 'bin', 'data-bin': b.start, 'data-bins': per > 1 ? b.end - b.start : null, 'data-count': b.count,
      'data-lo': lo, 'data-hi': hi }, bars);
    const name = per > 1 ? `bins ${b.start}–${b.end - 1}` : `bin ${b.start}`;
    el('title', {}, g, `${name}: [${fullValue(lo)}, ${fullValue(hi)}${b.end === B ? ']' : ')'} — ${b.count}`);
    el('rect', { x: x + gap, y: T + H - h, width: Math.max(0.5, pitch - 2 * gap), height: h, class: 'bar' }, g);
    if (D <= 32) el('text', { x: x + pitch / 2, y: T + H - h - 3, 'text-anchor': 'middle', class: 'count' }, g, b.count);
  });
  el('line', { x1: L, y1: T + H + 0.5, x2: L + PW, y2: T + H + 0.5, class: 'axis' }, svg);
  el('line', { x1: L - 0.5, y1: T, x2: L - 0.5, y2: T + H, class: 'axis' }, svg);
  // edges at the bars' sides: a tick for each (up to 64 bars), a label for every k-th so they do not
  // overlap, the last always
  const step = Math.max(1, Math.ceil((D + 1) / Math.max(2, Math.floor(PW / 40))));
  for (let j = 0; j <= D; j++) {
    const x = L + j * pitch, i = Math.min(B, j * per);
    if (D <= 64) el('line', { x1: x, y1: T + H, x2: x, y2: T + H + 4, class: 'axis' }, svg);
    if ((j % step && j !== D) || (j !== D && D - j < step)) continue; // the last label would overlap this one
    el('text', { x, y: T + H + 16, 'text-anchor': 'middle', class: 'edge', 'data-edge': i, 'data-value': edges[i] }, svg, fmtValue(edges[i]));
  }
  const lo = edges[0], hi = edges[B];
  const caption = `${resp.in_range} in range [${fullValue(lo)}, ${fullValue(hi)}] · ${resp.out_of_range} out of range ` +
    `(outside or NaN) · ${B} bin${B === 1 ? '' : 's'}, each [lo, hi), the last closed` + (per > 1 ? ` · ${per} bins a bar` : '');
  svg.setAttribute('aria-label', `histogram of ${body.data.length} values in ${B} bins: ${caption}`);
  const listed = counts.map((c, i) => i).filter((i) => B <= MAX_ROWS || counts[i] > 0).slice(0, MAX_ROWS);
  el('desc', {}, svg, listed.slice(0, 64).map((i) => `bin ${i} ${resp.counts[i]}`).join(', '));
  const rows = listed.map((i) => `<tr><td>${i}</td><td>${esc(fullValue(edges[i]))}</td><td>${esc(fullValue(edges[i + 1]))}${i === B - 1 ? ']' : ')'}</td>` +
    `<td>${esc(resp.counts[i])}</td></tr>`);
  const note = listed.length < B ? `<caption>the ${listed.length} bins that counted something, of ${B}</caption>` : '';
  const table = `<table>${note}<thead><tr><th>bin</th><th>from</th><th>to</th><th>count</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  return { svg, caption, table };
}

/** resp: {runs: N, keys: [...], data: [...]}; body: the request (keys.data, data, op). */
export function renderRuns(resp, body) {
  const keys = body.keys.data, data = body.data;
  const runs = keyRuns(keys);
  const n = data.length, drawn = Math.min(n, MAX_ELEMS);
  const P = n <= 32 ? 27 : 20, CW = P - 3, L = 40;
  const W = L + drawn * P + 8;
  const yKey = 18, yX = 46, yBr = 76, yOut = 86, H = yOut + 34 + (drawn < n ? 18 : 0);
  const svg = el('svg', { xmlns: NS, class: 'chart runs', role: 'img', width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  el('text', { x: 2, y: yKey + 16, class: 'row-label' }, svg, 'key');
  el('text', { x: 2, y: yX + 16, class: 'row-label' }, svg, 'x');
  el('text', { x: 2, y: yOut + 16, class: 'row-label' }, svg, 'out');
  runs.forEach((r, k) => {
    if (r.start >= drawn) return;
    const end = Math.min(r.end, drawn - 1);
    const fill = RUN_FILLS[k % RUN_FILLS.length], stroke = RUN_STROKES[k % RUN_STROKES.length];
    const value = resp.data ? resp.data[k] : undefined;
    const g = el('g', { class: 'run', 'data-run': k, 'data-key': String(r.key), 'data-start': r.start, 'data-end': r.end,
      'data-value': JSON.stringify(value ?? null), 'data-answer-key': resp.keys ? String(resp.keys[k]) : null }, svg);
    el('title', {}, g, `run ${k}: key ${r.key}, elements ${r.start}–${r.end} → ${fullValue(value)}`);
    for (let i = r.start; i <= end; i++) {
      const x = L + i * P;
      for (const [y, v, cls] of [[yKey, keys[i], 'key'], [yX, data[i], 'x']]) {
        el('rect', { x, y, width: CW, height: 24, rx: 3, fill, stroke, class: cls, 'data-index': i }, g);
        const s = fmtValue(v);
        fit(el('text', { x: x + CW / 2, y: y + 16, 'text-anchor': 'middle', class: 'val' }, g, s), s, CW, 12);
      }
    }
    const x1 = L + r.start * P, x2 = L + end * P + CW;
    el('path', { d: `M${x1},${yBr - 4} v4 H${x2} v-4`, stroke, fill: 'none', class: 'bracket' }, g);
    el('rect', { x: x1, y: yOut, width: x2 - x1, height: 26, rx: 3, fill: '#fff', stroke, 'stroke-width': 1.5, class: 'out' }, g);
    const s = fmtValue(value);
    fit(el('text', { x: (x1 + x2) / 2, y: yOut + 17, 'text-anchor': 'middle', class: 'val' }, g, s), s, x2 - x1, 12);
  });
  if (drawn < n) el('text', { x: 2, y: H - 4, class: 'warp-title' }, svg, `… ${n - drawn} more elements in the table`);
  const differ = resp.runs !== runs.length || (resp.keys || []).some((k, i) => runs[i] && String(k) !== String(runs[i].key));
  const caption = `${resp.runs} run${resp.runs === 1 ? '' : 's'} of equal consecutive keys over ${n} elements, each reduced with ${body.op}` +
    (differ ? ` — the answer's keys differ from the runs of the input (${runs.length})` : '');
  svg.setAttribute('aria-label', `reduce_by_key over ${n} elements: ${caption}`);
  el('desc', {}, svg, runs.map((r, k) => `key ${r.key} (${r.start}–${r.end}): ${fullValue(resp.data?.[k])}`).join('; '));
  const rows = runs.map((r, k) => `<tr><td>${k}</td><td>${esc(r.key)}</td><td>${r.start}–${r.end}</td><td>${r.end - r.start + 1}</td>` +
    `<td>${esc(fullValue(resp.data?.[k]))}</td></tr>`);
  const table = `<table><thead><tr><th>run</th><th>key</th><th>elements</th><th>length</th><th>${esc(body.op)}</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  return { svg, caption, table, differ };
}

/** The drawing of a chart answer (datafields.js asChart). */
export const renderChart = (resp, body) => (resp.chart === 'histogram' ? renderHistogram(resp, body) : renderRuns(resp, body));
