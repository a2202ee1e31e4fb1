// datajob.js — the data-parallel families (warp_reduce, warp_scan, stencil, device_reduce, ...) in the
// playground. They are not warp primitives: GET /v1/families gives each a `data` object naming its
// endpoint (POST /v1/reduce or /v1/scan) and what it returns (one value, one per group, one per
// element). Here a run becomes that endpoint's request over the lanes' values, and its answer becomes
// the per-lane shape the diagram draws (output, defined, undefined_reason), so warp_reduce and
// warp_scan step through like warp_allreduce. The histogram and reduce_by_key families take
// fields of their own and draw their own answers (datafields.js, charts.js). No DOM here.

import { extraArgs } from './datafields.js';

/** Families the playground can run: warp primitives, and data families with an HTTP endpoint. */
export const runnable = (f) => !f.data || /^\/v1\//.test(f.data.endpoint || '');

/** The request fields a data family takes beyond type and op, as argument descriptors for the form
 *  (buildArgs draws them like run-time arguments; `field` marks them as body fields). */
export function dataArgs(f) {
  if (!f.data) return [];
  const d = f.data, out = [];
  if (d.radius_max) {
    out.push({ name: 'radius', default: d.radius_min || 1, min: d.radius_min || 1, max: d.radius_max, per_lane: false, field: 'number' });
    out.push({ name: 'weights', default: '', per_lane: false, field: 'numbers', hint: '2·radius+1 numbers; empty: equal weights' });
  }
  if (d.scan) out.push({ name: 'exclusive', default: 0, min: 0, max: 1, per_lane: false, field: 'bool' });
  out.push(...extraArgs(f)); // sent by datafields.js applyFields
  return out;
}

/** The endpoint's body: spec fields, the extra fields, and the values inline (`data`). */
export function dataBody(f, s, values) {
  const body = { family: f.name, type: s.type };
  if (f.ops) body.op = s.op || f.ops[0];
  if (f.data.width_groups) body.width = s.width;
  for (const a of dataArgs(f)) {
    if (a.extra) continue;
    const text = String(s.args[a.name] ?? '').trim();
    if (text === '') continue;
    if (a.field === 'number') body[a.name] = Number(text);
    else if (a.field === 'bool') body[a.name] = text === '1' || text === 'true';
    else body[a.name] = text.split(/[\s,]+/).filter(Boolean).map(Number);
  }
  if (body.radius !== undefined && !body.weights) body.weights = new Array(2 * body.radius + 1).fill(1 / (2 * body.radius + 1));
  if (s.backend) body.backend = s.backend;
  body.data = values;
  return body;
}

/** The lanes that hold a result: every lane ("each"), the first lane of each group, or lane 0. */
function resultLanes(f, body, resp, n) {
  const d = f.data;
  if (d.result === 'each') return Array.from({ length: n }, (_, t) => t);
  if (d.result === 'groups') {
    const g = d.width_groups ? body.width : d.block_groups ? resp.block : n;
    return Array.from({ length: resp.out_count ?? Math.ceil(n / g) }, (_, k) => k * g);
  }
  return [0];
}

/** The endpoint's answer in /v1/warp's per-lane shape (output, defined, undefined_reason, result_lane),
 *  plus the fields the summary reads. Lanes without a result hold a partial value the kernel does not
 *  return: undefined, reason "partial". */
export function asLanes(f, body, resp) {
  const n = body.data.length;
  const out = new Array(n).fill(null), defined = new Array(n).fill(false), reason = new Array(n).fill('partial');
  const lanes = resultLanes(f, body, resp, n);
  const values = f.data.result === 'each' || f.data.result === 'groups' ? resp.data || [] : [resp.value ?? resp.result];
  lanes.forEach((t, k) => {
    if (t >= n) return;
    out[t] = values[k] ?? null, defined[t] = true, reason[t] = null;
  });
  return { ...resp, lanes: n, width: body.width || 32, mask: '0xffffffff', input: body.data, output: out, defined,
    undefined_reason: reason, result_lane: defined.slice() };
}
