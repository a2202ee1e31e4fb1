// app.js — the playground: reads the families from GET /v1/families, builds a /v1/warp request from
// the form, draws the result (diagram.js), steps through shuffle loops (steps.js), shows the compiled
// source from POST /v1/compile, and keeps the whole state in the URL hash so a link reproduces it.
// AMD's ds_permute / ds_bpermute (emulator only) are drawn next to the CUDA __shfl_sync that does the
// same move (compare.js). The data families' fields (ddof, map, a second input, histogram bins and range,
// reduce_by_key keys) are datafields.js; the histogram and by-key answers are drawn by charts.js.

import { LANES, bit, maskHex, parseMask, parseArg, parseValues, fullValue, ranges } from './util.js';
import { availablePresets } from './presets.js';
import { renderDiagram } from './diagram.js';
import { STEPPERS, computeFrames, checkFrames } from './steps.js';
import { compareRequest, lostWrites, compareLanes } from './compare.js';
import { runnable, dataArgs, dataBody, asLanes } from './datajob.js';
import { authHeaders, onUnauthorized, storedToken } from './token.js';
import { chartKind, takesMap, usesDdof, needsY, opsOf, applyFields, asChart } from './datafields.js';
import { renderChart } from './charts.js';

const $ = (id) => document.getElementById(id);
const ALL = 0xffffffff;

// ---------------------------------------------------------------- HTTP
export class ApiError extends Error {
  constructor(status, code, field, message) {
    super(message);
    Object.assign(this, { status, code, field });
  }
}
async function call(method, path, body) {
  let r, sent, text;
  do { // again after a 401, once the token is given (token.js)
    sent = storedToken();
    const init = { method, headers: authHeaders() };
    if (body !== undefined) init.body = JSON.stringify(body), init.headers['Content-Type'] = 'application/json';
    r = await fetch(path, init);
    text = await r.text();
  } while (r.status === 401 && await onUnauthorized(sent));
  let j = null;
  try { j = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!r.ok) {
    const e = (j && j.error) || {};
    throw new ApiError(r.status, e.code || 'http_' + r.status, e.field || '', e.message || text || r.statusText);
  }
  return j;
}
const post = (path, body) => call('POST', path, body);

// ---------------------------------------------------------------- state
let families = [];
const fam = {};
let info = null;
let state = null;
let lastRun = null; // {endpoint, body, resp, input, ms, family, cmp}
let frames = null;
let frameIx = 0;
let seq = 0; // drops responses of superseded runs
const sourceCache = new Map();

function defaultsFor(f, keep = {}) {
  const args = {};
  for (const a of f.args || []) if (a.name !== 'pred') args[a.name] = String(a.default ?? 0);
  const type = f.types.includes(keep.type) ? keep.type : f.types.includes('i32') ? 'i32' : f.types[0];
  const width = f.widths.includes(keep.width) ? keep.width : Math.max(...f.widths);
  // an operator is kept where the family lists it, an expression where it takes expressions
  const ops = opsOf(f);
  const op = f.ops ? (keep.op && (ops.includes(keep.op) || (f.expr && !/^\w+$/.test(keep.op))) ? keep.op : f.ops[0]) : '';
  return {
    family: f.name, type, width, mask: keep.mask ?? ALL, op, args,
    pred: keep.pred ?? { op: 'gt', value: '15', lo: '0', hi: '16' },
    input: { kind: 'iota', lanes: f.wave ? width : 32, elems: 1, seed: 1, values: '', ...(keep.input || {}) },
    active: keep.active ?? ALL, backend: keep.backend ?? '', step: false,
    ddof: keep.ddof ?? 0, map: keep.map ?? '', data2: keep.data2 ?? { kind: '', values: '' },
  };
}

// ---------------------------------------------------------------- URL hash ↔ state
function toHash(s) {
  const f = fam[s.family];
  const p = new URLSearchParams();
  p.set('family', s.family);
  p.set('type', s.type);
  p.set('width', s.width);
  if (f.mask && s.mask !== ALL) p.set('mask', maskHex(s.mask));
  if (f.ops) p.set('op', s.op);
  for (const [k, v] of Object.entries(s.args)) p.set('arg.' + k, v);
  if (hasPred(f)) {
    p.set('pred', s.pred.op);
    if (s.pred.op === 'between') p.set('lo', s.pred.lo), p.set('hi', s.pred.hi);
    else if (s.pred.op !== 'nonzero') p.set('value', s.pred.value);
  }
  p.set('input', s.input.kind);
  if (s.input.kind === 'values') p.set('values', s.input.values);
  else p.set('lanes', s.input.lanes);
  if (s.input.elems > 1) p.set('elems', s.input.elems);
  if (s.input.kind === 'random') p.set('seed', s.input.seed);
  if (s.active !== ALL) p.set('active', maskHex(s.active));
  if (s.backend) p.set('backend', s.backend);
  if (usesDdof(s.op, f) && s.ddof) p.set('ddof', s.ddof);
  if (takesMap(f) && s.map) p.set('map', s.map);
  if (takesMap(f) && s.data2.kind) p.set('y', s.data2.kind);
  if (takesMap(f) && s.data2.kind === 'values') p.set('yvalues', s.data2.values);
  if (s.step) p.set('step', frameIx);
  return p.toString();
}

function fromHash(hash) {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const f = fam[p.get('family')];
  if (!f) return null;
  const num = (k, d) => (p.has(k) && Number.isFinite(Number(p.get(k))) ? Number(p.get(k)) : d);
  const s = defaultsFor(f, { type: p.get('type'), width: num('width', 32) });
  if (p.has('mask')) s.mask = parseMask(p.get('mask')) ?? ALL;
  if (p.has('op')) s.op = p.get('op');
  for (const [k, v] of p) if (k.startsWith('arg.')) s.args[k.slice(4)] = v;
  if (p.has('pred')) s.pred = { op: p.get('pred'), value: p.get('value') ?? '0', lo: p.get('lo') ?? '0', hi: p.get('hi') ?? '0' };
  s.input = { kind: ['iota', 'random', 'values'].includes(p.get('input')) ? p.get('input') : 'iota',
    lanes: num('lanes', 32), elems: num('elems', 1), seed: num('seed', 1), values: p.get('values') ?? '' };
  if (p.has('active')) s.active = parseMask(p.get('active')) ?? ALL;
  s.backend = p.get('backend') ?? '';
  s.ddof = num('ddof', 0) === 1 ? 1 : 0;
  s.map = p.get('map') ?? '';
  s.data2 = { kind: ['iota', 'random', 'values'].includes(p.get('y')) ? p.get('y') : '', values: p.get('yvalues') ?? '' };
  s.step = p.has('step');
  s.stepFrame = num('step', 0);
  return s;
}

// ---------------------------------------------------------------- form
const hasPred = (f) => (f.args || []).some((a) => a.name === 'pred');
const predArg = (f) => (f.args || []).find((a) => a.name === 'pred');

function option(sel, value, text, selected) {
  const o = document.createElement('option');
  o.value = value, o.textContent = text ?? value;
  if (selected) o.selected = true;
  sel.appendChild(o);
}

function makeBits(id, onToggle) {
  const box = $(id);
  box.innerHTML = '';
  for (let l = 0; l < LANES; l++) {
    const b = document.createElement('button');
    b.type = 'button', b.textContent = l, b.dataset.lane = l, b.tabIndex = l === 0 ? 0 : -1;
    b.setAttribute('aria-label', `lane ${l}`);
    b.addEventListener('click', () => onToggle(l));
    b.addEventListener('keydown', (e) => {
      const d = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: 16, ArrowUp: -16 }[e.key];
      if (d === undefined) return;
      e.preventDefault();
      const next = box.children[(l + d + LANES) % LANES];
      for (const c of box.children) c.tabIndex = -1;
      next.tabIndex = 0, next.focus();
    });
    box.appendChild(b);
  }
}
function paintBits(id, m, disabled = false) {
  const box = $(id);
  box.classList.toggle('disabled', disabled);
  for (const b of box.children) {
    b.setAttribute('aria-pressed', String(bit(m, Number(b.dataset.lane))));
    b.disabled = disabled;
  }
}

function buildArgs(f) {
  const box = $('args');
  box.innerHTML = '';
  for (const a of f.args || []) {
    const d = document.createElement('div');
    d.className = 'field';
    if (a.name === 'pred') {
      d.innerHTML = `<label for="pred-op">Predicate <span class="hint">(on each lane's value x)</span></label>
        <div class="row tight"><select id="pred-op"></select>
        <input id="pred-value" size="6" aria-label="predicate constant a">
        <input id="pred-lo" size="4" aria-label="lower bound lo (exclusive)"><span id="pred-x">&lt; x &lt;</span>
        <input id="pred-hi" size="4" aria-label="upper bound hi (exclusive)"></div>`;
      box.appendChild(d);
      const names = { nonzero: 'x ≠ 0', gt: 'x > a', ge: 'x ≥ a', lt: 'x < a', le: 'x ≤ a', eq: 'x = a', ne: 'x ≠ a', between: 'lo<x<hi' };
      for (const op of a.ops) option($('pred-op'), op, `${op} (${names[op] || op})`);
      $('pred-op').addEventListener('change', () => { readForm(); showPredFields(); });
      continue;
    }
    const id = 'arg-' + a.name;
    const perLane = a.per_lane;
    const hint = a.hint ?? (perLane ? 'one value, one per lane, or a formula in lane' : `${a.min}…${a.max}`);
    d.innerHTML = `<label for="${id}">${a.name} <span class="hint">(${hint})</span></label>
      <input id="${id}" class="arg" spellcheck="false" data-arg="${a.name}" placeholder="${a.default}">`;
    box.appendChild(d);
  }
  $('args-field').hidden = !(f.args || []).length;
}
function showPredFields() {
  if (!$('pred-op')) return;
  const op = $('pred-op').value;
  $('pred-value').hidden = op === 'between' || op === 'nonzero';
  for (const id of ['pred-lo', 'pred-hi', 'pred-x']) $(id).hidden = op !== 'between';
}

function fillFamilyControls(f) {
  $('family').value = f.name;
  $('family-doc').textContent = f.doc + (f.backends ? ` · runs on ${f.backends.join(', ')}` : '');
  const typeSel = $('type');
  typeSel.innerHTML = '';
  for (const t of f.types) option(typeSel, t);
  const wSel = $('width');
  wSel.innerHTML = '';
  for (const w of f.widths) option(wSel, w);
  $('op-field').hidden = !f.ops;
  const dl = $('op-list');
  dl.innerHTML = '';
  for (const op of opsOf(f)) option(dl, op);
  $('op').placeholder = f.expr ? 'sum or a+b' : '';
  $('transform-field').hidden = !takesMap(f);
  $('mask-field').hidden = false;
  $('mask').disabled = !f.mask || !!f.data;
  $('mask-field').title = f.mask && !f.data ? '' : `${f.name} takes no member mask (${f.data ? 'a data-parallel job' : 'every active lane calls it'})`;
  $('active-field').hidden = !!f.data; // data jobs have no lanes that return early
  buildArgs(f);
  $('input-field').hidden = false;
  $('elems-field').hidden = !(f.max_elems > 1);
  $('elems').max = f.max_elems || 1;
  const noInput = f.input === false;
  $('input-kind').disabled = noInput;
  $('input-kind').title = noInput ? `${f.name} reads no values; only the number of lanes matters` : '';
}

function writeForm(s) {
  const f = fam[s.family];
  fillFamilyControls(f);
  $('type').value = s.type;
  $('width').value = String(s.width);
  $('op').value = s.op || '';
  const usesMask = f.mask && !f.data;
  $('mask').value = maskHex(usesMask ? s.mask : ALL);
  paintBits('mask-bits', usesMask ? s.mask : ALL, !usesMask);
  for (const a of f.args || []) {
    if (a.name === 'pred') {
      $('pred-op').value = s.pred.op;
      $('pred-value').value = s.pred.value, $('pred-lo').value = s.pred.lo, $('pred-hi').value = s.pred.hi;
      showPredFields();
    } else $('arg-' + a.name).value = s.args[a.name] ?? '';
  }
  $('input-kind').value = f.input === false ? 'iota' : s.input.kind;
  $('lanes').value = s.input.lanes, $('elems').value = s.input.elems, $('seed').value = s.input.seed;
  $('values').value = s.input.values;
  showInputFields();
  $('active').value = maskHex(s.active);
  paintBits('active-bits', s.active);
  $('backend').value = s.backend;
  $('ddof').value = String(s.ddof || 0);
  $('map').value = s.map || '';
  $('data2-kind').value = s.data2.kind, $('data2').value = s.data2.values;
  showOpFields();
  markInvalid(null);
}
/** ddof with var and std; the second input's values when typed. */
function showOpFields() {
  $('ddof-field').hidden = $('op-field').hidden || !usesDdof($('op').value.trim(), fam[$('family').value]);
  $('data2-field').hidden = $('data2-kind').value !== 'values';
}
function showInputFields() {
  const k = $('input-kind').value;
  $('seed-field').hidden = k !== 'random';
  $('values-field').hidden = k !== 'values';
  $('lanes-field').hidden = k === 'values';
}

/** Form → state; throws on unreadable hex so the user sees which field. */
function readForm() {
  const f = fam[$('family').value];
  const s = { ...state, family: f.name, type: $('type').value, width: Number($('width').value), op: $('op').value.trim() };
  const m = parseMask($('mask').value);
  if (f.mask && m === null) throw new ApiError(0, 'bad_mask', 'mask', `"${$('mask').value}" is not a 32-bit hex mask`);
  if (f.mask) s.mask = m;
  s.args = {};
  for (const a of f.args || []) {
    if (a.name === 'pred') s.pred = { op: $('pred-op').value, value: $('pred-value').value.trim(), lo: $('pred-lo').value.trim(), hi: $('pred-hi').value.trim() };
    else s.args[a.name] = $('arg-' + a.name).value.trim();
  }
  s.input = { kind: $('input-kind').value, lanes: Number($('lanes').value) || 32, elems: Number($('elems').value) || 1,
    seed: Number($('seed').value) || 0, values: $('values').value };
  const act = parseMask($('active').value);
  if (act === null) throw new ApiError(0, 'bad_active', 'active', `"${$('active').value}" is not a 32-bit hex mask`);
  s.active = act;
  s.backend = $('backend').value;
  s.ddof = Number($('ddof').value) === 1 ? 1 : 0;
  s.map = $('map').value.trim();
  s.data2 = { kind: $('data2-kind').value, values: $('data2').value };
  state = s;
  return s;
}

// ---------------------------------------------------------------- request
const typedConst = (text) => {
  const t = String(text).trim();
  if (t === '') return 0;
  const v = Number(t);
  return Number.isFinite(v) && (!Number.isInteger(v) || Number.isSafeInteger(v)) ? v : t;
};

/** state → {body, n, elems}: the exact /v1/warp body (also shown as curl). */
function buildRequest(s) {
  const f = fam[s.family];
  const body = { family: s.family, type: s.type, width: s.width };
  if (f.mask && !f.data) body.mask = maskHex(s.mask);
  if (f.ops) body.op = s.op || f.ops[0];
  let n = s.input.lanes;
  let input;
  if (f.input === false) input = n === LANES ? undefined : { iota: n };
  else if (s.input.kind === 'values') {
    try { input = parseValues(s.input.values); } catch (e) { throw new ApiError(0, 'bad_input', 'input', e.message); }
    n = input.length;
  } else if (s.input.kind === 'random') input = { random: n, seed: s.input.seed };
  else input = { iota: n };
  if (input && !Array.isArray(input) && s.input.elems > 1) input.elems = s.input.elems;
  if (f.data) return { endpoint: f.data.endpoint, input, n }; // run() fetches the values, datajob.js the body
  const args = {};
  for (const a of f.args || []) {
    if (a.name === 'pred') {
      const p = { op: s.pred.op };
      if (s.pred.op === 'between') p.lo = typedConst(s.pred.lo), p.hi = typedConst(s.pred.hi);
      else if (s.pred.op !== 'nonzero') p.value = typedConst(s.pred.value);
      args.pred = p;
      continue;
    }
    let v;
    try { v = parseArg(s.args[a.name], n); } catch (e) { throw new ApiError(0, 'bad_arg', 'args.' + a.name, `${a.name}: ${e.message}`); }
    if (v !== undefined) args[a.name] = v;
  }
  if (Object.keys(args).length) body.args = args;
  if (input !== undefined) body.input = input;
  if (s.active !== ALL) body.active = maskHex(s.active);
  if (s.backend) body.backend = s.backend;
  return { endpoint: '/v1/warp', body, n };
}

/** A data job's values as a list: typed values as given, iota here, random ones as /v1/warp makes
 *  them (the identity shuffle echoes them), so the diagram shows exactly what the job ran on. */
async function dataValues(input, type, n) {
  if (Array.isArray(input)) return input;
  if (input.iota !== undefined) return Array.from({ length: n }, (_, i) => i);
  const r = await post('/v1/warp', { family: 'shfl_xor', type, args: { lane_mask: 0 }, input, backend: 'emu' });
  return r.input;
}

/** The values of the second input y (data2) of a map or dot job, as long as x; null when there is none. */
async function secondInput(f, s, n) {
  if (!takesMap(f)) return null;
  const kind = s.data2.kind;
  if (!kind) {
    if (needsY(s.op, s.map)) throw new ApiError(0, 'bad_input', 'data2', `${s.op === 'dot' ? 'dot' : 'a map in y'} needs a second input y`);
    return null;
  }
  if (kind === 'values') {
    try { return parseValues(s.data2.values); } catch (e) { throw new ApiError(0, 'bad_input', 'data2', e.message); }
  }
  return dataValues(kind === 'random' ? { random: n, seed: s.input.seed + 1 } : { iota: n }, s.type, n);
}

/** The CUDA __shfl_sync equivalent of a ds_permute / ds_bpermute run (compare.js), or null. */
async function runCompare(body, resp, f) {
  const req = fam.shfl && compareRequest(f, body, resp);
  if (!req) return null;
  const r = await post('/v1/warp', req.body);
  return { ...req, resp: r, diff: compareLanes(f, body, resp, r) };
}

// ---------------------------------------------------------------- run
function markInvalid(field) {
  for (const e of document.querySelectorAll('[aria-invalid]')) e.removeAttribute('aria-invalid');
  if (!field) return null;
  const map = { family: 'family', type: 'type', width: 'width', mask: 'mask', op: 'op', active: 'active', backend: 'backend',
    ddof: 'ddof', map: 'map', data2: $('data2-kind').value === 'values' ? 'data2' : 'data2-kind', data2_b64: 'data2-kind',
    bins: 'arg-bins', range: 'arg-lo', lo: 'arg-lo', hi: 'arg-hi', keys: 'arg-keys' };
  let id = map[field.split(/[.[]/)[0]];
  if (field.startsWith('args.pred.')) id = 'pred-' + field.split('.')[2].replace(/\[.*/, '');
  else if (field.startsWith('args.')) id = 'arg-' + field.slice(5).replace(/\[.*/, '');
  else if (field.startsWith('input')) id = $('input-kind').value === 'values' ? 'values' : field.includes('elems') ? 'elems' : 'lanes';
  const e = id && $(id);
  if (e) e.setAttribute('aria-invalid', 'true');
  return e;
}
function showError(e) {
  const box = $('error');
  box.hidden = false;
  box.innerHTML = '';
  const code = document.createElement('code');
  code.textContent = e.code || 'error';
  box.append(code, ` ${e.status ? `(HTTP ${e.status}) ` : ''}${e.field ? `in ${e.field}: ` : ''}${e.message}`);
  markInvalid(e.field);
  $('result').classList.add('stale'); // the diagram below is the previous run's
}
function clearError() {
  $('error').hidden = true;
  $('result').classList.remove('stale');
  markInvalid(null);
}

async function run({ keepFrame = false } = {}) {
  let s;
  try { s = readForm(); } catch (e) { showError(e); return; }
  const f = fam[s.family];
  let req;
  try { req = buildRequest(s); } catch (e) { showError(e); return; }
  const my = ++seq;
  $('run').disabled = true;
  document.body.dataset.state = 'running';
  try {
    const t0 = performance.now();
    // /v1/warp's response carries the input as the kernel saw it (after generation and rounding to
    // the type) and, for votes, each lane's predicate: no extra calls.
    let body = req.body, resp;
    if (f.data) {
      body = dataBody(f, s, await dataValues(req.input, s.type, req.n));
      try { applyFields(f, s, body, await secondInput(f, s, body.data.length)); } catch (e) { throw e instanceof ApiError ? e : new ApiError(0, 'bad_input', e.field || 'input', e.message); }
      const answer = await post(req.endpoint, body);
      resp = chartKind(f) ? asChart(f, body, answer) : asLanes(f, body, answer);
    } else resp = await post(req.endpoint, body);
    const ms = performance.now() - t0;
    const cmp = await runCompare(body, resp, f).catch((e) => ({ error: e }));
    if (my !== seq) return;
    clearError();
    lastRun = { endpoint: req.endpoint, body, resp, input: resp.input || null, ms, family: f, cmp };
    frames = null;
    if (!keepFrame) frameIx = 0;
    render();
    updateUrl();
    if (s.step && STEPPERS[s.family] && !body.map && !body.data2) await startSteps(s.stepFrame ?? frameIx);
    else setStepUi();
    if ($('source-box').open) loadSource();
    document.body.dataset.state = 'done';
  } catch (e) {
    if (my !== seq) return;
    showError(e);
    document.body.dataset.state = 'error';
  } finally {
    if (my === seq) $('run').disabled = false;
  }
}

function updateUrl() {
  const h = '#' + toHash(state);
  if (location.hash !== h) history.replaceState(null, '', h);
}

// ---------------------------------------------------------------- drawing
function activeList(n) {
  if (fam[state.family] && fam[state.family].data) return new Array(n).fill(true);
  return Array.from({ length: n }, (_, t) => bit(state.active, t % LANES));
}

function render() {
  const { resp, input, family: f } = lastRun;
  if (resp.chart) return renderChartRun();
  document.querySelector('#table-box summary').textContent = 'Lane table';
  const frame = frames ? frames[frameIx] : null;
  const model = frame
    ? { n: resp.lanes, elems: 1, width: resp.width, mask: parseMask(resp.mask ?? ALL), maskApplies: f.mask && !f.data, tiled: false,
      active: activeList(resp.lanes), kind: 'value', input: frame.before, output: frame.after, defined: frame.defined,
      inDefined: frameIx > 0 ? frames[frameIx - 1].defined : undefined,
      reason: frame.reason, source: frame.source_lane, pred: null }
    : { n: resp.lanes, elems: resp.elems || (input && Array.isArray(input[0]) ? input[0].length : 1), width: resp.width,
      mask: parseMask(resp.mask ?? ALL), maskApplies: f.mask && !f.data, tiled: f.tiled, active: activeList(resp.lanes),
      kind: f.output, input: input, output: resp.output, defined: resp.defined, reason: resp.undefined_reason,
      source: resp.source_lane || null, pred: resp.pred || resp.lane_pred || null,
      group: f.wave ? resp.width : LANES, lost: lostWrites(f, lastRun.body, resp) };
  const { svg, groups } = renderDiagram(model);
  svg.setAttribute('aria-label', `${resp.family} over ${resp.lanes} lanes` + (frame ? `, step ${frameIx}` : ''));
  $('diagram').replaceChildren(svg);
  renderLegend(groups, model);
  renderCompare();
  renderSummary();
  renderTable(model);
  renderRequest();
}

/** A histogram or reduce_by_key answer: its chart, its totals under it, its bins or runs in the table. */
function renderChartRun() {
  const c = renderChart(lastRun.resp, lastRun.body);
  $('diagram').replaceChildren(c.svg);
  $('legend').textContent = c.caption;
  $('compare').hidden = true;
  renderSummary();
  $('lane-table').innerHTML = c.table;
  document.querySelector('#table-box summary').textContent = lastRun.resp.chart === 'histogram' ? 'Bin table' : 'Run table';
  renderRequest();
}

function renderLegend(groups, model) {
  const box = $('legend');
  box.replaceChildren();
  const colours = ['#93c5fd', '#fca5a5', '#86efac', '#fcd34d', '#c4b5fd', '#f9a8d4', '#67e8f9', '#fdba74', '#a3e635', '#d8b4fe', '#5eead4', '#fda4af'];
  groups.slice(0, 16).forEach((g, k) => {
    const s = document.createElement('span');
    s.className = 'item';
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = colours[k % colours.length]; // CSSOM, not a style attribute: the CSP allows it
    s.append(swatch, g.text);
    box.appendChild(s);
  });
  if (groups.length > 16) box.append(` … ${groups.length - 16} more groups`);
  if (!groups.length && model.kind === 'bool') box.textContent = 'out: 1 where the vote holds (green), 0 otherwise.';
}

/** The CUDA equivalent of a ds_* run, drawn under it, with the lanes where the two differ. */
function renderCompare() {
  const box = $('compare');
  const c = lastRun.cmp;
  box.hidden = !c || frames;
  if (!c) return;
  if (c.error) {
    $('compare-title').textContent = 'CUDA equivalent';
    $('compare-about').textContent = '';
    $('compare-diagram').replaceChildren();
    $('compare-diff').textContent = `could not run it: ${c.error.code || ''} ${c.error.message || c.error}`;
    return;
  }
  const r = c.resp;
  const model = { n: r.lanes, elems: 1, width: r.width, mask: ALL, maskApplies: false, tiled: false,
    active: activeList(r.lanes), kind: 'value', input: r.input || null, output: r.output, defined: r.defined,
    reason: r.undefined_reason, source: r.source_lane || null, pred: null, group: LANES };
  const { svg } = renderDiagram(model);
  svg.setAttribute('aria-label', `${c.title} over ${r.lanes} lanes`);
  $('compare-diagram').replaceChildren(svg);
  $('compare-title').textContent = `${c.title} — ran on ${r.backend}`;
  $('compare-about').textContent = c.about;
  const d = c.diff;
  const diffBox = $('compare-diff');
  diffBox.dataset.differ = d.lanes.join(',');
  diffBox.className = d.lanes.length ? 'bad' : 'ok';
  diffBox.textContent = d.lanes.length
    ? `Same value in ${d.same} of ${d.total} lanes; differs in ${d.groups.map((g) => `lane${g.lanes.length > 1 ? 's' : ''} ${ranges(g.lanes)} (${g.why})`).join('; ')}.`
    : `Same value in all ${d.total} lanes.`;
}

function renderSummary() {
  const { resp, ms } = lastRun;
  const t = resp.timing || {};
  // a step that was not timed (cuda without "profile") is null: left out, device_us stands for it
  const fmt = (k, unit) => (t[k] != null ? `${k.replace(/_(us|ms)$/, '')} ${Number(t[k]).toFixed(unit === 'ms' ? 2 : 1)} ${unit === 'ms' ? 'ms' : 'µs'}` : null);
  const timings = [fmt('parse_us'), fmt('key_us'), fmt('cache_us'), fmt('compile_ms', 'ms'), fmt('load_us'), fmt('upload_us'),
    fmt('kernel_us'), fmt('download_us'), fmt('device_us'), fmt('emulate_us'), fmt('total_us')].filter(Boolean).join(' · ');
  const cache = resp.cache || 'none';
  const src = { memory: 'memory cache', disk: 'disk cache', compile: 'compiled now (NVRTC)', none: 'no kernel (emulator only)' }[cache] || cache;
  const box = $('summary');
  box.innerHTML = '';
  const line = (k, ...parts) => {
    const d = document.createElement('div');
    const kk = document.createElement('span');
    kk.className = 'k', kk.textContent = k + ': ';
    d.append(kk, ...parts);
    box.appendChild(d);
    return d;
  };
  const code = (text, cls) => { const c = document.createElement('code'); c.textContent = text; if (cls) c.className = cls; return c; };
  const span = (text, cls) => { const c = document.createElement('span'); c.textContent = text; if (cls) c.className = cls; return c; };
  line('backend', span(resp.backend, 'backend'), ` (${resp.device || ''})`).id = 'sum-backend';
  line('key', code(resp.key || '—'), resp.hash ? ' ' : '', resp.hash ? code(resp.hash.slice(0, 12) + '…') : '').id = 'sum-key';
  line('kernel from', span(src, 'src-' + cache)).id = 'sum-cache';
  line('timings', timings, ` · round trip ${ms.toFixed(1)} ms`).id = 'sum-timing';
  box.dataset.cache = cache;
}

function renderTable(model) {
  const rows = [];
  const esc = (s) => String(s).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]));
  for (let t = 0; t < model.n; t++) {
    const d = model.defined[t];
    rows.push(`<tr><td>${t}</td><td>${model.active[t] ? '' : 'inactive'}</td><td>${model.input ? esc(fullValue(model.input[t])) : ''}</td>` +
      `<td>${model.source ? (model.source[t] ?? '') : ''}</td>` +
      `<td class="${d ? '' : 'undef'}">${d ? esc(fullValue(model.output[t])) : 'undefined: ' + esc(model.reason[t])}</td>` +
      `${model.pred ? `<td>${model.pred[t] ?? ''}</td>` : ''}</tr>`);
  }
  $('lane-table').innerHTML = `<table><thead><tr><th>lane</th><th></th><th>in</th><th>src</th><th>out</th>${model.pred ? '<th>pred</th>' : ''}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function renderRequest() {
  const json = JSON.stringify(lastRun.body);
  const auth = storedToken() ? ` -H "Authorization: Bearer $WARPD_TOKEN"` : '';
  $('request').textContent = `curl -s ${location.origin}${lastRun.endpoint} -H 'Content-Type: application/json'${auth} -d '${json}'`;
}

// ---------------------------------------------------------------- step-through
function setStepUi() {
  const can = !!STEPPERS[state.family] && !!fam.warp_allreduce && !!fam[STEPPERS[state.family].shuffle] && fam[state.family].input !== false
    && ((state.width || 32) & ((state.width || 32) - 1)) === 0; // a logical warp of 7 has no shuffle segments to step through
  $('stepper').hidden = !can;
  $('step-toggle').setAttribute('aria-pressed', String(!!frames));
  $('step-toggle').textContent = frames ? 'Show the result' : 'Step through';
  $('step-nav').hidden = !frames;
  if (lastRun && (lastRun.body.map || lastRun.body.data2)) $('stepper').hidden = true; // frames shuffle the values unmapped
  if (!frames) { $('step-label').textContent = can ? 'one frame per shuffle step' : ''; $('step-label').className = ''; return; }
  $('step-range').max = frames.length - 1;
  $('step-range').value = frameIx;
  const fr = frames[frameIx];
  const lastIx = frames.length - 1;
  let text = frameIx === 0 ? `frame 0/${lastIx}: the input` : `frame ${frameIx}/${lastIx}: offset ${fr.offset}: ${fr.text}`;
  if (frameIx === lastIx) {
    const bad = checkFrames(frames, lastRun.resp);
    text += bad.length ? ` — differs from ${state.family} in lanes ${bad.join(', ')}` : ` — equals ${state.family}'s result`;
    $('step-label').className = bad.length ? 'bad' : 'ok';
  } else $('step-label').className = '';
  $('step-label').textContent = text;
}

async function startSteps(at = 0) {
  const { resp, input, body } = lastRun;
  if (!input) return;
  const my = seq;
  $('step-label').textContent = 'computing frames…';
  try {
    const fr = await computeFrames(post, { ...body, op: body.op, width: resp.width }, input, resp.lanes);
    if (my !== seq) return;
    frames = fr;
    frameIx = Math.max(0, Math.min(at, frames.length - 1));
    state.step = true;
    delete state.stepFrame;
    render();
    setStepUi();
    updateUrl();
  } catch (e) {
    showError(e);
  }
}
function stopSteps() {
  frames = null, frameIx = 0, state.step = false;
  render();
  setStepUi();
  updateUrl();
}
function goFrame(k) {
  if (!frames) return;
  frameIx = Math.max(0, Math.min(k, frames.length - 1));
  render();
  setStepUi();
  updateUrl();
}

// ---------------------------------------------------------------- source panel
let sourceTab = 'source';
async function loadSource() {
  if (!lastRun) return;
  const f = lastRun.family;
  const meta = $('source-meta');
  if (!f.template) {
    meta.textContent = `${f.name} runs on the emulator only; there is no CUDA source to show.`;
    $('source-text').textContent = '';
    return;
  }
  const b = lastRun.body;
  const spec = { family: b.family, type: b.type, width: b.width };
  if (b.mask) spec.mask = b.mask;
  if (b.op) spec.op = b.op;
  const key = JSON.stringify(spec);
  let r = sourceCache.get(key);
  if (!r) {
    meta.textContent = 'compiling…';
    try { r = await post('/v1/compile', { ...spec, ptx: true, source: true, sass: true }); } catch (e) { meta.textContent = `${e.code}: ${e.message}`; return; }
    sourceCache.set(key, r);
  }
  meta.innerHTML = '';
  const add = (k, v) => { const d = document.createElement('div'); const c = document.createElement('code'); c.textContent = v; d.append(k + ': ', c); meta.appendChild(d); };
  add('instantiation', r.instantiation || '');
  add('lowered name', r.lowered_name || '');
  add('registers', String(r.regs));
  add('spills', String(r.spills));
  add('cubin', `${r.cubin_bytes} bytes for ${r.arch}, ${r.cache === 'compile' ? `compiled in ${Number(r.compile_ms).toFixed(1)} ms` : `from the ${r.cache} cache`}`);
  meta.dataset.regs = r.regs, meta.dataset.spills = r.spills;
  showSourceTab(sourceTab, r);
}
function showSourceTab(tab, r) {
  sourceTab = tab;
  for (const b of document.querySelectorAll('#source-tabs [role=tab]')) b.setAttribute('aria-selected', String(b.dataset.tab === tab));
  if (!r) {
    const b = lastRun && lastRun.body;
    r = b && [...sourceCache.values()].find((x) => x.key && x.key.startsWith(`${b.family}/${b.type}/w${b.width}/`));
  }
  if (!r) return;
  const text = tab === 'sass' ? (r.sass ?? '(no SASS: nvdisasm is not installed on the server)') : tab === 'log' ? (r.log || '(empty log)') : r[tab] || '';
  $('source-text').textContent = text;
}

// ---------------------------------------------------------------- presets, events, start
function applyPreset(p) {
  const f = fam[p.family];
  const s = defaultsFor(f);
  const ps = p.state || {};
  Object.assign(s, { ...ps, args: { ...s.args, ...(ps.args || {}) }, input: { ...s.input, ...(ps.input || {}) } });
  if (ps.pred) s.pred = { ...s.pred, ...ps.pred };
  if (ps.mask !== undefined) s.mask = parseMask(ps.mask);
  if (ps.active !== undefined) s.active = parseMask(ps.active);
  s.step = !!ps.step;
  s.stepFrame = 1; // a stepping preset opens on the first shuffle step
  state = s;
  writeForm(s);
  $('preset-about').textContent = p.about || '';
  run();
}

function toggleBits(which, l) {
  const key = which === 'mask' ? 'mask' : 'active';
  const m = parseMask($(key).value) ?? ALL;
  const nm = (m ^ (1 << l)) >>> 0;
  $(key).value = maskHex(nm);
  paintBits(key + '-bits', nm);
}

function wire() {
  makeBits('mask-bits', (l) => toggleBits('mask', l));
  makeBits('active-bits', (l) => toggleBits('active', l));
  $('controls').addEventListener('submit', (e) => { e.preventDefault(); run({ keepFrame: true }); });
  $('controls').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && e.target.tagName === 'TEXTAREA') { e.preventDefault(); $('controls').requestSubmit(); }
  });
  $('family').addEventListener('change', () => {
    const f = fam[$('family').value];
    let keep = {};
    try { keep = readFormLoose(); } catch { /* keep defaults */ }
    state = defaultsFor(f, keep);
    writeForm(state);
    $('preset').value = '';
    $('preset-about').textContent = '';
    run();
  });
  $('preset').addEventListener('change', () => {
    const p = availablePresets(families).find((x) => x.id === $('preset').value);
    if (p) applyPreset(p);
  });
  $('input-kind').addEventListener('change', showInputFields);
  $('op').addEventListener('input', showOpFields);
  $('data2-kind').addEventListener('change', showOpFields);
  for (const k of ['mask', 'active']) {
    $(k).addEventListener('input', () => { const m = parseMask($(k).value); if (m !== null) paintBits(k + '-bits', m); });
  }
  for (const b of document.querySelectorAll('button[data-bits]')) {
    b.addEventListener('click', () => {
      const k = b.dataset.bits;
      const m = parseMask($(k).value) ?? ALL;
      const nm = { all: ALL, none: 0, invert: ~m >>> 0, even: 0x55555555 }[b.dataset.set] >>> 0;
      $(k).value = maskHex(nm);
      paintBits(k + '-bits', nm);
    });
  }
  $('step-toggle').addEventListener('click', () => (frames ? stopSteps() : startSteps(1)));
  $('step-prev').addEventListener('click', () => goFrame(frameIx - 1));
  $('step-next').addEventListener('click', () => goFrame(frameIx + 1));
  $('step-range').addEventListener('input', () => goFrame(Number($('step-range').value)));
  $('diagram').addEventListener('keydown', (e) => {
    if (!frames) return;
    if (e.key === 'ArrowRight') e.preventDefault(), goFrame(frameIx + 1);
    if (e.key === 'ArrowLeft') e.preventDefault(), goFrame(frameIx - 1);
  });
  $('source-box').addEventListener('toggle', () => { if ($('source-box').open) loadSource(); });
  for (const b of document.querySelectorAll('#source-tabs [role=tab]')) b.addEventListener('click', () => showSourceTab(b.dataset.tab));
  $('share').addEventListener('click', async () => {
    try { readForm(); } catch (e) { showError(e); return; }
    history.replaceState(null, '', '#' + toHash(state));
    try { await navigator.clipboard.writeText(location.href); $('share').textContent = 'Copied'; } catch { $('share').textContent = 'Link in the address bar'; }
    setTimeout(() => { $('share').textContent = 'Copy link'; }, 1500);
  });
  window.addEventListener('hashchange', () => {
    const s = fromHash(location.hash);
    if (s && location.hash !== '#' + toHash(state)) { state = s; writeForm(s); frameIx = s.stepFrame || 0; run({ keepFrame: true }); }
  });
}
function readFormLoose() {
  return { type: $('type').value, width: Number($('width').value), mask: parseMask($('mask').value) ?? ALL,
    active: parseMask($('active').value) ?? ALL, backend: $('backend').value, op: $('op').value,
    ddof: Number($('ddof').value) === 1 ? 1 : 0, map: $('map').value.trim(), data2: { kind: $('data2-kind').value, values: $('data2').value },
    input: { kind: $('input-kind').value, lanes: Number($('lanes').value) || 32, elems: Number($('elems').value) || 1,
      seed: Number($('seed').value) || 0, values: $('values').value } };
}

/** The header's user: name and role (read, run, admin), from GET /v1/whoami. */
function showUser(me) {
  const el = $('user');
  el.hidden = !me;
  el.textContent = me ? `${me.name} · ${me.role}` : '';
}

async function start() {
  wire();
  try {
    const [fl, inf, me] = await Promise.all([call('GET', '/v1/families'), call('GET', '/v1/info'),
      call('GET', '/v1/whoami').catch(() => null)]); // who the token is (an older daemon has no whoami)
    showUser(me);
    // Warp primitives, and the data families with an endpoint; their extra fields become arguments.
    // A data family's own fields replace an argument of the same name that the daemon lists.
    const withData = (f, extra) => ({ ...f, args: [...(f.args || []).filter((a) => !extra.some((d) => d.name === a.name)), ...extra] });
    families = fl.families.filter(runnable).map((f) => (f.data ? withData(f, dataArgs(f)) : f));
    info = inf;
  } catch (e) {
    $('server').textContent = e.status === 401 ? 'the daemon needs its token: reload to give it' : 'cannot reach the daemon';
    showError(e);
    return;
  }
  for (const f of families) fam[f.name] = f;
  $('server').textContent = `${info.name} ${info.version} · backend ${info.backend} (${info.device?.name || ''}) · ${info.arch} · NVRTC ${info.nvrtc?.version || '?'}`;
  for (const b of info.backends || []) option($('backend'), b);
  for (const f of families) option($('family'), f.name);
  for (const p of availablePresets(families)) option($('preset'), p.id, p.name);
  const fromUrl = location.hash.length > 1 ? fromHash(location.hash) : null;
  state = fromUrl || defaultsFor(fam.shfl_xor || families[0]);
  if (!fromUrl) state.width = fam[state.family].widths.includes(16) ? 16 : state.width, state.args.lane_mask !== undefined && (state.args.lane_mask = '1');
  frameIx = fromUrl ? fromUrl.stepFrame || 0 : 0;
  writeForm(state);
  document.body.dataset.ready = 'true';
  await run({ keepFrame: true });
}

start();
