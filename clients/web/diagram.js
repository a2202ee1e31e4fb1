// diagram.js — draws one warp run as SVG: lanes before (in) and after (out), an arrow from each source
// lane to its destination, width segments shaded, lanes outside the member mask or inactive greyed,
// undefined results hatched and labelled with their reason, mask results (ballot, activemask, match)
// as coloured groups plus bit rows, bool results (votes) as a bit row, per-lane arrays as columns.
//
// A panel is a CUDA warp of 32 lanes, or for AMD's ds_permute / ds_bpermute (model.group 64) a wave of
// 64 lanes drawn at half the pitch so both fit the same width; ds_permute's writes that lost a collision
// are dashed arrows (model.lost).
//
// Every drawn lane carries data-* attributes (lane, value, defined, reason) and every arrow data-src
// and data-dst, so tests and screen readers read the same facts the picture shows.

import { bit, fmtValue, fullValue, maskHex, ranges } from './util.js';

const NS = 'http://www.w3.org/2000/svg';
const LANES = 32; // lanes of a CUDA warp: a panel, unless model.group says otherwise
// Lane pitch and cell width: set per drawing from the panel's lane count (27/24 for 32 lanes).
let P = 27;
let CW = 24;
const LM = 40; // left margin for row labels
const EH = 19; // height of one element of a per-lane array
const MAX_WARPS = 8; // drawn; the lane table has every lane

const GROUP_COLOURS = ['#93c5fd', '#fca5a5', '#86efac', '#fcd34d', '#c4b5fd', '#f9a8d4', '#67e8f9', '#fdba74',
  '#a3e635', '#d8b4fe', '#5eead4', '#fda4af'];
export const groupLetter = (k) => (k < 26 ? String.fromCharCode(65 + k) : 'G' + k);

function el(name, attrs = {}, parent = null, text = null) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

let hueLanes = LANES;
const laneHue = (l) => (l * 360 / hueLanes + 200) % 360;
const laneFill = (l) => `hsl(${laneHue(l)} 70% 88%)`;
const laneStroke = (l) => `hsl(${laneHue(l)} 55% 38%)`;

function defs(svg) {
  const d = el('defs', {}, svg);
  const pat = el('pattern', { id: 'hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, d);
  el('rect', { width: 6, height: 6, fill: '#fff7ed' }, pat);
  el('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#ea580c', 'stroke-width': 2 }, pat);
  const m = el('marker', { id: 'head', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, d);
  el('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#475569' }, m);
}

/** One value cell (or column of cells for arrays); returns the group. */
function cell(g, x, y, value, opts) {
  const elems = Array.isArray(value) ? value.length : 1;
  const vals = Array.isArray(value) ? value : [value];
  const h = elems > 1 ? elems * EH : 24;
  const cg = el('g', { class: opts.cls, 'data-lane': opts.lane, 'data-value': JSON.stringify(value ?? null),
    'data-defined': opts.defined === undefined ? null : String(opts.defined), 'data-reason': opts.reason || null,
    'data-group': opts.group ?? null }, g);
  el('title', {}, cg, opts.title);
  vals.forEach((v, e) => {
    const yy = y + (elems > 1 ? e * EH : 0);
    const hh = elems > 1 ? EH - 1 : 24;
    const undef = opts.defined === false && (v === null || v === undefined);
    el('rect', { x, y: yy, width: CW, height: hh, rx: 3,
      fill: undef ? 'url(#hatch)' : opts.grey ? '#e5e7eb' : opts.fill,
      stroke: opts.grey ? '#cbd5e1' : opts.stroke, 'stroke-width': opts.grey ? 1 : 1.2,
      class: undef ? 'undef' : null }, cg);
    const s = undef ? '?' : (opts.label ?? fmtValue(v));
    const narrow = CW < 20;
    const long = s.length > (narrow ? 2 : 3);
    const t = el('text', { x: x + CW / 2, y: yy + hh / 2 + 4, 'text-anchor': 'middle',
      class: 'val' + (opts.grey ? ' grey' : '') + (undef ? ' undef' : ''),
      'font-size': narrow ? (long ? 8 : 10) : long ? 9.5 : 12 }, cg, s.length > 6 ? s.slice(0, 5) + '…' : s);
    if (long && s.length > (narrow ? 2 : 4)) t.setAttribute('textLength', CW - 2), t.setAttribute('lengthAdjust', 'spacingAndGlyphs');
  });
  return h;
}

/**
 * model: { n, elems, width, mask (number), maskApplies, tiled, active: bool[n], kind: value|bool|mask|mask_pred,
 *          input: values[]|null, inDefined: bool[]|undefined (step frames), output: [], defined: [], reason: [],
 *          source: []|null, pred: []|null, group: lanes per panel (32; 64 for a wave64),
 *          lost: [[src, dst]]|undefined (ds_permute writes that lost a collision) }
 * Returns { svg, groups: [{letter, value, lanes}] }.
 */
export function renderDiagram(model) {
  const G = model.group || LANES; // lanes per panel
  P = G > LANES ? 14 : 27;
  CW = G > LANES ? 12.5 : 24;
  hueLanes = G;
  const unit = G > LANES ? 'wave' : 'warp';
  const svg = el('svg', { xmlns: NS, class: 'diagram' + (G > LANES ? ' wide' : ''), role: 'img', width: LM + G * P + 8 });
  defs(svg);
  const n = model.n;
  const elemsIn = Math.max(1, model.elems || 1);
  const outArrays = model.kind === 'value' && elemsIn > 1;
  const hIn = elemsIn > 1 ? elemsIn * EH : 24;
  const hOut = outArrays ? elemsIn * EH : 24;
  const W = model.width || 32;
  const warps = Math.ceil(n / G);
  const drawWarps = Math.min(warps, MAX_WARPS);
  const arrows = !!model.source;
  const member = (t) => !model.maskApplies || bit(model.mask, t % LANES);
  const participant = (t) => model.active[t] && member(t);

  // Mask results: one colour/letter per distinct value, in order of first appearance.
  const groupOf = new Map();
  const groups = [];
  if (model.kind === 'mask' || model.kind === 'mask_pred') {
    for (let t = 0; t < n; t++) {
      const v = model.output[t];
      if (!model.defined[t] || v === null) continue;
      if (!groupOf.has(v)) { groupOf.set(v, groups.length); groups.push({ letter: groupLetter(groups.length), value: v, lanes: [] }); }
      groups[groupOf.get(v)].lanes.push(t);
    }
  }

  let y = 4;
  const desc = [];
  for (let w = 0; w < drawWarps; w++) {
    const base = w * G;
    const last = Math.min(n, base + G) - 1;
    const g = el('g', { class: 'warp', 'data-warp': w }, svg);
    if (warps > 1) { el('text', { x: 2, y: y + 12, class: 'warp-title' }, g, `${unit} ${w} — threads ${base}–${base + G - 1}`); y += 18; }
    const yLane = y + 11;
    const yIn = y + 18;
    const yArrow = yIn + hIn;
    const zone = arrows ? 84 : 22;
    const yOut = yArrow + zone;
    // Extra rows under "out": pred (match_all), bit rows (mask results).
    const tileW = model.tiled ? W : G;
    const rowsPerTile = [];
    if (groups.length) {
      for (let s = 0; s < G; s += tileW) {
        const seen = [];
        for (let l = s; l < s + tileW && base + l <= last; l++) {
          const t = base + l;
          if (model.defined[t] && groupOf.has(model.output[t]) && !seen.includes(model.output[t])) seen.push(model.output[t]);
        }
        rowsPerTile.push({ start: s, values: seen });
      }
    }
    const bitRows = Math.min(6, Math.max(0, ...rowsPerTile.map((r) => r.values.length)));
    let yExtra = yOut + hOut + 6;
    const yPred = model.pred ? yExtra : null;
    if (model.pred) yExtra += 22;
    const yBits = yExtra;
    yExtra += bitRows * 16 + (bitRows ? 4 : 0);

    // Undefined reasons: runs of equal reasons get a bracket; short runs a vertical label.
    const runs = [];
    for (let t = base; t <= last; t++) {
      if (model.defined[t] !== false) continue;
      const r = model.reason[t] || 'undefined';
      const prev = runs[runs.length - 1];
      if (prev && prev.reason === r && prev.end === t - 1) prev.end = t;
      else runs.push({ reason: r, start: t, end: t });
    }
    const vertical = runs.some((r) => (r.end - r.start + 1) * P < r.reason.length * 6.2 + 6);
    const yWhy = yExtra;
    const bandWhy = runs.length ? (vertical ? 92 : 24) : 0;
    const panelBottom = yWhy + bandWhy;

    // Width segments: shaded bands behind both rows. A width that does not divide the panel (a logical
    // warp of 7) has groups that run on into the next panel: each is cut at the panel's edges.
    for (let s0 = Math.floor(base / W) * W; s0 <= last; s0 += W) {
      const s = Math.max(s0, base) - base, e = Math.min(s0 + W - 1, last) - base;
      const x = LM + s * P - 2;
      el('rect', { x, y: yIn - 4, width: (e - s + 1) * P + 1, height: yOut + hOut + 4 - (yIn - 4),
        fill: (s0 / W) % 2 ? '#e8eef9' : '#f4f7fc', stroke: '#c7d2e6', 'stroke-dasharray': '3 3', class: 'segment',
        'data-start': base + s }, g);
    }
    el('text', { x: 2, y: yLane, class: 'row-label' }, g, 'lane');
    el('text', { x: 2, y: yIn + hIn / 2 + 4, class: 'row-label' }, g, 'in');
    el('text', { x: 2, y: yOut + hOut / 2 + 4, class: 'row-label' }, g, 'out');
    for (let t = base; t <= last; t++) {
      const l = t - base;
      const x = LM + l * P;
      el('text', { x: x + CW / 2, y: yLane, 'text-anchor': 'middle', class: 'lane-no' + (member(t) ? '' : ' off') }, g, String(l));
      // before
      const grey = !participant(t);
      const inV = model.input ? model.input[t] : null;
      cell(g, x, yIn, model.input ? inV : elemsIn > 1 ? new Array(elemsIn).fill('') : '', {
        cls: 'lane in', lane: t, fill: laneFill(l), stroke: laneStroke(l), grey, label: model.input ? undefined : '',
        defined: model.inDefined ? model.inDefined[t] : undefined,
        title: `lane ${t}${model.active[t] ? '' : ' (inactive: returned early)'}${member(t) ? '' : ' (not in the member mask)'}` +
          (model.input ? `\nin: ${fullValue(inV)}` : '') });
      // after
      const out = model.output[t];
      const def = model.defined[t];
      const src = model.source ? model.source[t] : null;
      let fill = '#ffffff', stroke = '#475569', label, group = null;
      if (def && src !== null && src !== undefined) fill = laneFill(src % G), stroke = laneStroke(src % G);
      if (def && groupOf.has(out)) {
        group = groupOf.get(out);
        fill = GROUP_COLOURS[group % GROUP_COLOURS.length], stroke = '#334155', label = groupLetter(group);
      }
      if (def && model.kind === 'bool') fill = out ? '#86efac' : '#f1f5f9', stroke = out ? '#15803d' : '#94a3b8';
      const whyText = def ? '' : `\nundefined: ${model.reason[t] || ''}`;
      cell(g, x, yOut, out, {
        cls: 'lane out', lane: t, fill, stroke, grey: false, label, defined: def,
        reason: def ? null : model.reason[t], group: group === null ? null : groupLetter(group),
        title: `lane ${t} out: ${fullValue(out)}${src !== null && src !== undefined ? `\nfrom lane ${src}` : ''}${whyText}` });
      if (model.pred) {
        const pv = model.pred[t];
        el('rect', { x, y: yPred, width: CW, height: 16, rx: 2, class: 'pred', 'data-lane': t, 'data-value': JSON.stringify(pv ?? null),
          fill: pv === null ? 'url(#hatch)' : pv ? '#86efac' : '#f1f5f9', stroke: '#94a3b8' }, g);
        el('text', { x: x + CW / 2, y: yPred + 12, 'text-anchor': 'middle', class: 'val small' }, g, pv === null ? '?' : pv ? '1' : '0');
      }
    }
    if (model.pred) el('text', { x: 2, y: yPred + 12, class: 'row-label' }, g, 'pred');
    // Bit rows: the k-th distinct result of each tile, bit (lane - tile start) drawn under each lane.
    if (bitRows) {
      el('text', { x: 2, y: yBits + 12, class: 'row-label' }, g, 'bits');
      for (const tile of rowsPerTile) {
        tile.values.slice(0, bitRows).forEach((v, k) => {
          const word = parseInt(String(v), 16) >>> 0;
          const gi = groupOf.get(v);
          for (let l = tile.start; l < tile.start + tileW && base + l <= last; l++) {
            const on = bit(word, l - tile.start);
            el('rect', { x: LM + l * P + 3, y: yBits + k * 16, width: CW - 6, height: 13, rx: 2,
              class: 'bit' + (on ? ' on' : ''), 'data-lane': base + l, 'data-row': k, 'data-group': groupLetter(gi),
              fill: on ? GROUP_COLOURS[gi % GROUP_COLOURS.length] : '#ffffff', stroke: on ? '#334155' : '#cbd5e1' }, g);
          }
        });
      }
    }
    // Arrows: source lane (bottom of "in") → destination lane (top of "out").
    if (arrows) {
      const ag = el('g', { class: 'arrows' }, g);
      for (let t = base; t <= last; t++) {
        const s = model.source[t];
        if (s === null || s === undefined) continue;
        const x1 = LM + (s - base) * P + CW / 2, y1 = yArrow + 1;
        const x2 = LM + (t - base) * P + CW / 2, y2 = yOut - 2;
        const keep = s === t;
        const dy = (y2 - y1) * 0.5;
        el('path', { d: `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`, class: 'arrow' + (keep ? ' keep' : ''),
          'data-src': s, 'data-dst': t, stroke: laneStroke(s - base), fill: 'none', 'marker-end': 'url(#head)' }, ag);
      }
      // ds_permute: a write that lost a collision to a higher lane, dashed and grey.
      for (const [s, t] of model.lost || []) {
        if (s < base || s > last || t < base || t > last) continue;
        const x1 = LM + (s - base) * P + CW / 2, y1 = yArrow + 1;
        const x2 = LM + (t - base) * P + CW / 2, y2 = yOut - 2;
        const dy = (y2 - y1) * 0.5;
        el('path', { d: `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`, class: 'arrow lost',
          'data-src': s, 'data-dst': t, stroke: '#94a3b8', 'stroke-dasharray': '4 3', fill: 'none' }, ag);
      }
    }
    // Undefined labels.
    for (const r of runs) {
      const x1 = LM + (r.start - base) * P, x2 = LM + (r.end - base) * P + CW;
      if (!vertical) {
        el('path', { d: `M${x1},${yWhy + 2} v4 H${x2} v-4`, class: 'why-bracket' }, g);
        el('text', { x: (x1 + x2) / 2, y: yWhy + 18, 'text-anchor': 'middle', class: 'why', 'data-start': r.start, 'data-end': r.end }, g, r.reason);
      } else {
        for (let t = r.start; t <= r.end; t++) {
          const x = LM + (t - base) * P + CW / 2 + 4;
          el('text', { x, y: yWhy + 4, transform: `rotate(90 ${x} ${yWhy + 4})`, class: 'why vertical', 'data-start': t, 'data-end': t }, g, r.reason);
        }
      }
    }
    desc.push(...runs.map((r) => `lanes ${r.start === r.end ? r.start : r.start + '–' + r.end} undefined (${r.reason})`));
    y = panelBottom + 10;
  }
  if (warps > drawWarps) { el('text', { x: 2, y: y + 12, class: 'warp-title' }, svg, `… ${warps - drawWarps} more warps in the lane table`); y += 20; }
  svg.setAttribute('height', y);
  svg.setAttribute('viewBox', `0 0 ${LM + G * P + 8} ${y}`);
  el('desc', {}, svg, `${n} lanes, width ${W}` + (model.maskApplies ? `, mask ${maskHex(model.mask)}` : '') + (desc.length ? '; ' + desc.join('; ') : ''));
  return { svg, groups: groups.map((gr) => ({ ...gr, text: `${gr.letter} = ${gr.value} (lanes ${ranges(gr.lanes)})` })) };
}
