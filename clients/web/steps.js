// steps.js — step-through frames for the shuffle-loop families: one frame per shuffle step, with the
// partial value in every lane after that step.
//
// How a frame is computed (and why not another way): the tempting shortcut, warp_allreduce with
// width 2, 4, 8, 16, 32, is NOT the kernel's partial state: the butterfly runs offsets 16, 8, 4, 2, 1,
// so after the first step lane l holds op(v[l], v[l^16]) — a pair 16 lanes apart — while width 2 gives
// op(v[l], v[l^1]). Only the final frame would agree. So each step runs what the kernel runs:
//   1. POST /v1/warp with the shuffle family (shfl_xor for the butterfly) and the step's offset as its
//      argument, on the previous frame's values, with the request's own type, width, member mask and
//      active lanes — that gives the partner value, its source lane (the arrows) and CUDA's
//      definedness for this step;
//   2. the operator is applied by the server too, never re-implemented here: POST /v1/warp with
//      warp_allreduce, width 2, over pairs (own, partner) laid side by side, which computes exactly
//      op(a = own, b = partner) with the server's rules for every type, f16 rounding and expressions.
// Definedness is carried as docs/semantics.md says: a lane whose shuffle is undefined takes that
// step's reason; one whose partner was already undefined becomes undef_operand; once undefined, a lane
// stays so. The last frame is compared with the family's own result and the page says if they differ.

const down = (w) => { const o = []; for (let k = w >> 1; k > 0; k >>= 1) o.push(k); return o; };
const up = (w) => down(w).reverse();

export const STEPPERS = {
  // docs/semantics.md: for (o = W/2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(MASK, v, o, W))
  warp_allreduce: { shuffle: 'shfl_xor', arg: 'lane_mask', offsets: down, order: 'own,partner', apply: 'always',
    text: (o) => `v = op(v, __shfl_xor_sync(mask, v, ${o}, width))` },
  // reductions: warp_reduce over __shfl_down_sync, result in lane 0 (frames checked against the family's result).
  warp_reduce: { shuffle: 'shfl_down', arg: 'delta', offsets: down, order: 'own,partner', apply: 'always',
    text: (o) => `v = op(v, __shfl_down_sync(mask, v, ${o}, width))` },
  // scans: inclusive warp_scan over __shfl_up_sync: lanes whose source is in range combine.
  warp_scan: { shuffle: 'shfl_up', arg: 'delta', offsets: up, order: 'partner,own', apply: 'in_range',
    text: (o) => `p = __shfl_up_sync(mask, v, ${o}, width); if (lane_in_segment >= ${o}) v = op(p, v)` },
};

const PAIR_CHUNK = 512; // pairs per warp_allreduce call: 2 lanes each, at most 1024 lanes a request

/**
 * post(path, body) → response JSON (throws on HTTP errors).
 * base: the family's request body (family, type, width, mask?, op, active?); values: the initial
 * values per lane (scalars); n lanes. Returns [{offset, text, before, partner, source_lane, after,
 * defined, reason}], frame 0 being the input.
 */
export async function computeFrames(post, base, values, n) {
  const st = STEPPERS[base.family];
  if (!st) throw new Error(`no step-through for ${base.family}`);
  const width = base.width || 32;
  let cur = values.slice(0, n);
  let def = new Array(n).fill(true);
  let why = new Array(n).fill(null);
  const frames = [{ offset: null, text: 'input', before: cur, after: cur, defined: def, reason: why, source_lane: null }];
  for (const o of st.offsets(width)) {
    const shfl = { family: st.shuffle, type: base.type, width, args: { [st.arg]: o },
      input: cur.map((v, i) => (def[i] && v !== null ? v : 0)) };
    if (base.mask !== undefined) shfl.mask = base.mask;
    if (base.active !== undefined) shfl.active = base.active;
    if (base.backend !== undefined) shfl.backend = base.backend;
    const r = await post('/v1/warp', shfl);
    const nextDef = def.slice(), nextWhy = why.slice(), next = cur.slice();
    const combine = []; // lanes whose value becomes op(...)
    for (let l = 0; l < n; l++) {
      if (!def[l]) { next[l] = null; continue; }
      if (!r.defined[l]) { nextDef[l] = false; nextWhy[l] = r.undefined_reason[l]; next[l] = null; continue; }
      const p = r.source_lane ? r.source_lane[l] : l;
      if (p !== null && p !== l && !def[p]) { nextDef[l] = false; nextWhy[l] = 'undef_operand'; next[l] = null; continue; }
      if (st.apply === 'in_range' && p === l) continue; // out of range: keeps its own value
      combine.push(l);
    }
    for (let c = 0; c < combine.length; c += PAIR_CHUNK) {
      const part = combine.slice(c, c + PAIR_CHUNK);
      const input = [];
      for (const l of part) {
        const own = cur[l], partner = r.output[l];
        if (st.order === 'own,partner') input.push(own, partner);
        else input.push(partner, own);
      }
      const body = { family: 'warp_allreduce', type: base.type, width: 2, op: base.op, input };
      if (base.backend !== undefined) body.backend = base.backend;
      const pr = await post('/v1/warp', body);
      part.forEach((l, k) => { next[l] = pr.output[2 * k]; });
    }
    frames.push({ offset: o, text: st.text(o), before: cur, partner: r.output, source_lane: r.source_lane || null,
      after: next, defined: nextDef, reason: nextWhy, shuffle_key: r.key });
    cur = next, def = nextDef, why = nextWhy;
  }
  return frames;
}

/** Does the last frame agree with the family's own response? Returns a list of lanes that differ.
 *  A data job (warp_reduce) returns only its result lanes (resp.result_lane): only those count. */
export function checkFrames(frames, resp) {
  const last = frames[frames.length - 1];
  const bad = [];
  for (let l = 0; l < last.after.length; l++) {
    if (resp.result_lane && !resp.result_lane[l]) continue;
    const a = last.defined[l] ? JSON.stringify(last.after[l]) : 'undefined:' + last.reason[l];
    const b = resp.defined[l] ? JSON.stringify(resp.output[l]) : 'undefined:' + resp.undefined_reason[l];
    if (a !== b) bad.push(l);
  }
  return bad;
}
