// presets.js — the classic warp patterns, as data. A preset names a family and the fields it sets;
// everything else comes from that family's defaults in GET /v1/families. The playground lists only
// the presets whose family the server has, so presets for families still being written (warp_reduce,
// warp_scan, stencil, ds_permute, ds_bpermute) appear by themselves once the server offers them.
//
// state fields: type, width, mask, op, args {name: text}, pred {op, value, lo, hi},
//               input {kind: iota|random|values, lanes, elems, seed, values}, active (hex), step (bool)

const lanes = (f, n = 32) => Array.from({ length: n }, (_, i) => f(i)).join(', ');

// The permute pair: the same byte addresses, pushed (ds_permute) and pulled (ds_bpermute). Lane i
// names lane i+1 (lane 63's address 256 wraps to lane 0), and lane 40 names lane 6 as well.
export const PERMUTE_ADDR = lanes((i) => (i === 40 ? 6 : i + 1) * 4, 64);

export const PRESETS = [
  { id: 'broadcast', name: 'Broadcast from lane 3', family: 'shfl',
    about: '__shfl_sync(mask, v, 3): every lane reads lane 3.',
    state: { type: 'i32', args: { src_lane: '3' }, input: { kind: 'random', seed: 1 } } },
  { id: 'shift-up', name: 'Shift up by 1', family: 'shfl_up',
    about: '__shfl_up_sync(mask, v, 1): lane i reads lane i−1; lane 0 keeps its own value.',
    state: { type: 'i32', args: { delta: '1' } } },
  { id: 'shift-down', name: 'Shift down by 2', family: 'shfl_down',
    about: '__shfl_down_sync(mask, v, 2): lane i reads lane i+2; the last two lanes keep their own.',
    state: { type: 'i32', args: { delta: '2' } } },
  { id: 'rotate', name: 'Rotate by 1 (src_lane = lane+1)', family: 'shfl',
    about: '__shfl_sync with a per-lane source: the index wraps modulo the width, so this rotates.',
    state: { type: 'i32', args: { src_lane: 'lane+1' } } },
  { id: 'butterfly', name: 'Butterfly (xor 16)', family: 'shfl_xor',
    about: '__shfl_xor_sync(mask, v, 16): the two halves of the warp swap.',
    state: { type: 'i32', args: { lane_mask: '16' } } },
  { id: 'xor-array', name: 'Xor of a per-lane array', family: 'shfl_xor',
    about: 'Each lane holds 3 elements; every element moves with the same partner lane ^ 1.',
    state: { type: 'i32', args: { lane_mask: '1' }, input: { kind: 'iota', elems: 3 } } },
  { id: 'swap', name: 'Element swap between paired lanes', family: 'swap',
    about: 'Lane i and lane i^1 exchange element 0 of one with element 3 of the other (two shfl_xor).',
    state: { type: 'i32', args: { lane_mask: '1', first: '0', second: '3' }, input: { kind: 'iota', elems: 4 } } },
  { id: 'ballot-range', name: 'Ballot of 42 < x < 53 (128 threads)', family: 'ballot',
    about: '__ballot_sync over four warps: bits set where the value lies strictly between 42 and 53.',
    state: { type: 'i32', pred: { op: 'between', lo: '42', hi: '53' }, input: { kind: 'iota', lanes: 128 } } },
  { id: 'activemask-odd', name: '__activemask with odd lanes returned', family: 'activemask',
    about: 'The odd lanes return at the top of the kernel; the even lanes see 0x55555555.',
    state: { active: '0x55555555' } },
  { id: 'allreduce-sum', name: 'Butterfly all-reduce: sum', family: 'warp_allreduce',
    about: 'for (o = 16; o > 0; o /= 2) v += __shfl_xor_sync(mask, v, o); step through the five shuffles.',
    state: { type: 'f32', op: 'sum', step: true } },
  { id: 'allreduce-max', name: 'Butterfly all-reduce: max', family: 'warp_allreduce',
    about: 'The same butterfly with max: every lane ends with the warp maximum.',
    state: { type: 'i32', op: 'max', input: { kind: 'random', seed: 7 }, step: true } },
  { id: 'match-groups', name: 'Match groups (value = lane % 4)', family: 'match_any',
    about: '__match_any_sync: each lane gets the mask of lanes holding the same bits; one colour per group.',
    state: { type: 'u32', input: { kind: 'values', values: lanes((i) => i % 4) } } },
  { id: 'vote-any', name: 'Vote: any lane equal to 17', family: 'vote_any',
    about: '__any_sync: true in every lane when some participating lane holds 17.',
    state: { type: 'i32', pred: { op: 'eq', value: '17' } } },
  // Data-parallel families (POST /v1/reduce, /v1/scan; datajob.js) and AMD's permutes (emulator only).
  { id: 'warp-reduce', name: 'Warp reduce (shfl_down): sum', family: 'warp_reduce',
    about: 'Tree reduction over __shfl_down_sync; the result lands in lane 0.', state: { type: 'i32', op: 'sum', step: true } },
  { id: 'warp-scan', name: 'Warp scan (shfl_up): inclusive sum', family: 'warp_scan',
    about: 'Kogge–Stone scan over __shfl_up_sync.', state: { type: 'i32', op: 'sum', step: true } },
  { id: 'moving-average', name: '5-point moving average from shuffles', family: 'stencil',
    about: 'stencil, radius 2, weights 1/5: each lane averages itself and two neighbours each side, taken with shuffles; ' +
      '0 where the window leaves the array.',
    state: { type: 'f32', args: { radius: '2', weights: '0.2, 0.2, 0.2, 0.2, 0.2' } } },
  { id: 'ds-permute', name: 'AMD ds_permute: forward permute (push), 64-lane wave', family: 'ds_permute',
    about: 'Each lane writes its value to lane addr/4 of the wave (byte addresses): lane i to i+1, lane 63 wraps to 0, and ' +
      'lanes 5 and 40 both write lane 6 — the highest lane wins (the loser is dashed); lane 41 gets nothing: 0. ' +
      'Runs on the emulator; below, the CUDA shuffle that does the same.',
    state: { type: 'i32', width: 64, args: { addr: PERMUTE_ADDR }, input: { kind: 'iota', lanes: 64 } } },
  { id: 'ds-bpermute', name: 'AMD ds_bpermute: backward permute (pull), 64-lane wave', family: 'ds_bpermute',
    about: 'The same addresses, pulled: lane i reads lane addr/4 — i+1, lane 63 wraps to lane 0, lane 40 reads lane 6. ' +
      'This is __shfl_sync (below), except that a CUDA warp is 32 lanes wide.',
    state: { type: 'i32', width: 64, args: { addr: PERMUTE_ADDR }, input: { kind: 'iota', lanes: 64 } } },
];

/** The presets the server can run: those whose family /v1/families lists. */
export function availablePresets(families) {
  const names = new Set(families.map((f) => f.name));
  return PRESETS.filter((p) => names.has(p.family));
}
