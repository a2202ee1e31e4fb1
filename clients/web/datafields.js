// datafields.js — the fields the data families add to a data job (docs/api.md, POST /v1/reduce and /v1/scan), as
// the playground sends them: "ddof" with var/std, a "map" expression and a second input "data2" (and
// "op":"dot"), the histogram family's "bins" and "range", reduce_by_key's "keys". Also which drawing a
// family's answer gets: lanes (datajob.js asLanes), a histogram or runs of keys (charts.js). No DOM here.
//
// Nothing here assumes the daemon has these families or ops: the form offers what GET /v1/families lists
// (a family by its name, ops from its "ops"), and a field left empty is not sent.

import { parseArg } from './util.js';

/** The drawing a family's answer gets: 'histogram', 'runs' (reduce_by_key), or null (lanes). */
export function chartKind(f) {
  if (!f || !f.data) return null;
  if (f.name === 'histogram' || f.data.result === 'histogram' || f.data.result === 'counts') return 'histogram';
  if (f.name === 'reduce_by_key' || f.data.result === 'runs' || f.data.result === 'by_key') return 'runs';
  return null;
}

/** Families whose request takes "map" and a second input: those whose data.map says so; from a daemon
 *  that does not say, the operator jobs of /v1/reduce and /v1/scan (not the histogram nor reduce_by_key,
 *  which draw their own answers). */
export function takesMap(f) {
  if (!f || !f.data || chartKind(f)) return false;
  if (typeof f.data.map === 'boolean') return f.data.map;
  return !!f.ops && /^\/v1\/(reduce|scan)$/.test(f.data.endpoint || '');
}
/** "ddof" goes with the ops the family's stats.ddof_ops names (var and std, SHAPES.md). */
export const usesDdof = (op, f = null) => (f && f.stats && Array.isArray(f.stats.ddof_ops) ? f.stats.ddof_ops.includes(op) : op === 'var' || op === 'std');
/** The operators to offer: the family's, and "dot" (map x*y, op sum) where it takes a map. */
export const opsOf = (f) => [...(f.ops || []), ...(f.ops && takesMap(f) && !f.ops.includes('dot') ? ['dot'] : [])];
/** dot is map x*y, op sum: it needs y, as a map that names y does. */
export const needsY = (op, map) => op === 'dot' || /(^|[^A-Za-z0-9_])y([^A-Za-z0-9_]|$)/.test(map || '');

/** The form fields of the histogram and reduce_by_key families, drawn like run-time arguments (buildArgs)
 *  and sent by applyFields, not by dataBody (`extra`). */
export function extraArgs(f) {
  const kind = chartKind(f);
  if (kind === 'histogram') {
    const max = (f.data && f.data.bins_max) || 65536;
    return [
      { name: 'bins', default: 8, min: 1, max, per_lane: false, field: 'number', extra: true, hint: `1…${max}` },
      { name: 'lo', default: '', per_lane: false, extra: true, hint: 'range lo; empty: the smallest value' },
      { name: 'hi', default: '', per_lane: false, extra: true, hint: 'range hi; empty: the largest value' },
    ];
  }
  if (kind === 'runs') {
    return [{ name: 'keys', default: 't/4', per_lane: true, extra: true,
      hint: 'i32, one per element or a formula in t (t/4: runs of 4); equal neighbours form a run' }];
  }
  return [];
}

/** numpy's default histogram range: the finite values' min and max (±0.5 when they are equal). */
export function autoRange(values) {
  const xs = values.map(Number).filter(Number.isFinite);
  if (!xs.length) return [0, 1];
  let lo = Math.min(...xs), hi = Math.max(...xs);
  if (lo === hi) lo -= 0.5, hi += 0.5;
  return [lo, hi];
}

const num = (text, field) => {
  const v = Number(String(text).trim());
  if (String(text).trim() === '' || !Number.isFinite(v)) throw Object.assign(new Error(`${field}: "${text}" is not a number`), { field });
  return v;
};

/**
 * Adds the data families' fields to a data job's body (made by dataBody): s is the form state (ddof, map,
 * args), values2 the second input's values or null. Throws {field, message} for what the form can tell.
 */
export function applyFields(f, s, body, values2) {
  addFields(f, s, body, values2);
  const { data, data2 } = body; // the values last, as a reader of the request wants them
  delete body.data, delete body.data2;
  return Object.assign(body, { data }, data2 ? { data2 } : {});
}

function addFields(f, s, body, values2) {
  const kind = chartKind(f);
  const n = body.data.length;
  if (kind === 'histogram') {
    const a = s.args || {};
    body.bins = String(a.bins ?? '').trim() === '' ? 8 : num(a.bins, 'bins');
    const [alo, ahi] = autoRange(body.data);
    const lo = String(a.lo ?? '').trim() === '' ? alo : num(a.lo, 'lo');
    const hi = String(a.hi ?? '').trim() === '' ? ahi : num(a.hi, 'hi');
    body.range = [lo, hi];
    delete body.op;
    return body;
  }
  if (kind === 'runs') {
    let k;
    try { k = parseArg(String(s.args?.keys ?? '').trim() || 't/4', n); } catch (e) { throw Object.assign(new Error(`keys: ${e.message}`), { field: 'keys' }); }
    body.keys = { type: 'i32', data: typeof k === 'number' ? new Array(n).fill(k) : k };
    return body;
  }
  if (usesDdof(body.op, f) && Number(s.ddof) === 1) body.ddof = 1;
  if (takesMap(f) && s.map) body.map = s.map;
  if (values2) body.data2 = values2;
  return body;
}

/** The answer of a histogram or reduce_by_key job, with what the summary and the request panel read. */
export function asChart(f, body, resp) {
  return { ...resp, chart: chartKind(f), lanes: body.data.length, input: body.data, output: [], defined: [], undefined_reason: [] };
}

/** Runs of equal consecutive keys: [{start, end, key}] (end inclusive). */
export function keyRuns(keys) {
  const runs = [];
  keys.forEach((k, i) => {
    const last = runs[runs.length - 1];
    if (last && String(last.key) === String(k)) last.end = i;
    else runs.push({ start: i, end: i, key: k });
  });
  return runs;
}
