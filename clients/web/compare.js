// compare.js — AMD's permutes next to CUDA's shuffle. No DOM here (tests import it too).
//
// ds_bpermute (pull) is __shfl_sync with src_lane = addr / 4. ds_permute (push) has no CUDA
// instruction: a push becomes a pull once each lane knows who wrote to it, so its equivalent is
// __shfl_sync with src_lane = the lane that won the write (its own lane where nobody wrote). The
// CUDA run uses 32-lane warps; docs/semantics.md says how the AMD side wraps addresses, resolves
// collisions (highest lane wins) and gives 0 to lanes nobody wrote or whose source is inactive.

const WARP = 32;

/** A request's per-lane argument as a list of n ints (one value means every lane). */
function perLane(v, n) {
  return Array.isArray(v) ? v : Array.from({ length: n }, () => (v === undefined ? 0 : v));
}

/** The lane (within its wave) that a byte address names: (addr / 4) mod wave, addr unsigned. */
export const addrLane = (addr, wave) => (addr >>> 2) & (wave - 1);

/** The CUDA request that does the same move, with its title and explanation; null for other families. */
export function compareRequest(f, body, resp) {
  if (!f.wave || !resp.input) return null;
  const n = resp.lanes, wave = resp.width;
  const addr = perLane(body.args && body.args.addr, n);
  const src = Array.from({ length: n }, (_, t) => {
    const base = t - (t % wave);
    if (f.name === 'ds_bpermute') return addrLane(addr[t], wave);
    const s = resp.source_lane[t];
    return s === null || s === undefined ? t - base : s - base;
  });
  const req = { family: 'shfl', type: resp.type, width: WARP, args: { src_lane: src }, input: resp.input };
  if (body.active !== undefined) req.active = body.active;
  if (body.backend) req.backend = body.backend;
  const pull = f.name === 'ds_bpermute';
  return {
    body: req,
    title: pull ? 'CUDA: __shfl_sync(0xffffffff, v, addr / 4)' : 'CUDA: __shfl_sync(0xffffffff, v, src), src = the lane that wrote here',
    about: pull
      ? 'The same pull with a CUDA shuffle. A warp is 32 lanes and src_lane wraps within it, so a source in the other half of a 64-lane wave is out of reach; an inactive source is undefined on CUDA, 0 on AMD.'
      : 'CUDA has no push: invert the permutation and pull from the winning writer. A warp is 32 lanes, so a writer in the other half of a 64-lane wave is out of reach; a lane nobody wrote keeps its own value instead of 0.',
  };
}

/** ds_permute: the writes [src, dst] that lost a collision to a higher lane (drawn dashed). */
export function lostWrites(f, body, resp) {
  if (f.name !== 'ds_permute') return undefined;
  const n = resp.lanes, wave = resp.width;
  const addr = perLane(body.args && body.args.addr, n);
  const lost = [];
  for (let t = 0; t < n; t++) {
    if (!resp.defined[t]) continue; // an inactive lane writes nothing
    const base = t - (t % wave), dst = base + addrLane(addr[t], wave);
    if (dst < n && resp.defined[dst] && resp.source_lane[dst] !== t) lost.push([t, dst]);
  }
  return lost;
}

/** Lane by lane: where the CUDA run gives another value than the AMD one, and why. */
export function compareLanes(f, body, amd, cuda) {
  const groups = new Map();
  let same = 0;
  const why = (t) => {
    const s = amd.source_lane[t];
    if (!amd.defined[t] || !cuda.defined[t]) return 'undefined on one side';
    if (s === null || s === undefined)
      return f.name === 'ds_permute' ? 'nobody wrote it: 0 on AMD, its own value on CUDA' : 'its source is inactive: 0 on AMD';
    if (Math.floor(s / WARP) !== Math.floor(t / WARP)) return 'the source is in the other 32-lane half of the wave';
    return 'another source';
  };
  for (let t = 0; t < amd.lanes; t++) {
    const a = amd.defined[t] ? JSON.stringify(amd.output[t]) : null;
    const c = cuda.defined[t] ? JSON.stringify(cuda.output[t]) : null;
    if (a === c) { same++; continue; }
    const w = why(t);
    if (!groups.has(w)) groups.set(w, []);
    groups.get(w).push(t);
  }
  const list = [...groups].map(([w, lanes]) => ({ why: w, lanes }));
  return { same, total: amd.lanes, lanes: list.flatMap((g) => g.lanes).sort((x, y) => x - y), groups: list };
}
