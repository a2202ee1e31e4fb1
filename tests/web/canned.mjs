// canned.mjs — what a daemon with the statistics, histogram and reduce_by_key families answers
// (SHAPES.md), for playwright's page.route(), so the playground's new controls and drawings are tested
// while the daemon under test may lack them. What the
// daemon lists itself goes to it: GET /v1/families only gains what it lacks (the statistics ops on
// device_reduce, the histogram and reduce_by_key families, rows made from device_reduce's), and a
// POST /v1/reduce is answered here only for a family or op that was added, or for a map, data2 or dot when
// device_reduce's data.map does not say it takes them. A plain sum is always asked of
// the daemon, and the canned statistics answers are its answer with the value replaced ("like sum's").
// Used by playground.test.mjs and tests/lint/axe.mjs.

export const STAT_OPS = ['mean', 'var', 'std', 'norm1', 'norm2', 'norminf', 'count_nonzero'];

/** numpy's histogram of the values: [lo, hi) each bin, the last closed; NaN and outside values left out. */
export function npHistogram(xs, bins, lo, hi) {
  const counts = new Array(bins).fill(0);
  let inRange = 0;
  for (const x of xs.map(Number)) {
    if (!(x >= lo && x <= hi)) continue;
    counts[x === hi ? bins - 1 : Math.floor(((x - lo) / (hi - lo)) * bins)]++, inRange++;
  }
  return { counts: counts.map(String), in_range: String(inRange), out_of_range: String(xs.length - inRange),
    edges: Array.from({ length: bins + 1 }, (_, i) => lo + ((hi - lo) * i) / bins) };
}

/** Route handlers for one page: { families, reduce, sent } (sent: every /v1/reduce body, in order). */
export function dataFamilyRoutes() {
  const added = new Set(); // families and device_reduce ops the daemon did not list; 'map' when it takes none
  const sent = [];
  async function families(route) {
    const j = await (await route.fetch()).json();
    const dr = j.families.find((f) => f.name === 'device_reduce');
    for (const op of STAT_OPS) if (!dr.ops.includes(op)) dr.ops.push(op), added.add(op);
    if (dr.data.map !== true) added.add('map'); // the page offers map, data2 and dot all the same
    const row = (name, doc, ops) => ({ ...structuredClone(dr), name, doc, ...(ops ? { ops } : { ops: undefined, expr: undefined }),
      data: { ...dr.data, result: name === 'histogram' ? 'histogram' : 'runs' } });
    if (!j.families.some((f) => f.name === 'histogram')) j.families.push(row('histogram', 'counts in bins of [lo, hi)', null)), added.add('histogram');
    if (!j.families.some((f) => f.name === 'reduce_by_key')) {
      j.families.push(row('reduce_by_key', 'reduce each run of equal keys', ['sum', 'min', 'max'])), added.add('reduce_by_key');
    }
    await route.fulfill({ json: j });
  }
  async function reduce(route) {
    const b = JSON.parse(route.request().postData());
    sent.push(b);
    const emu = { backend: 'emu', device: 'CPU emulator', count: b.data.length };
    if (b.family === 'histogram' && added.has('histogram')) {
      return route.fulfill({ json: { family: 'histogram', type: b.type, ...emu, ...npHistogram(b.data, b.bins, b.range[0], b.range[1]) } });
    }
    if (b.family === 'reduce_by_key' && added.has('reduce_by_key')) {
      const keys = [], data = [];
      b.keys.data.forEach((k, i) => (keys.length && keys.at(-1) === k ? (data[data.length - 1] += Number(b.data[i])) : (keys.push(k), data.push(Number(b.data[i])))));
      return route.fulfill({ json: { family: 'reduce_by_key', type: b.type, op: b.op, ...emu, runs: keys.length, keys, data } });
    }
    // ddof comes with the statistics ops, dot and data2 with map: canned while the daemon lacks those
    const mine = added.has(b.op) || (b.ddof !== undefined && added.has('var')) || ((b.map || b.data2 || b.op === 'dot') && added.has('map'));
    if (!mine) return route.continue();
    const x = b.data.map(Number), y = (b.data2 || []).map(Number), m = x.reduce((a, v) => a + v, 0) / x.length;
    const value = b.op === 'var' ? x.reduce((a, v) => a + (v - m) ** 2, 0) / (x.length - (b.ddof || 0))
      : b.op === 'mean' ? m : b.op === 'dot' ? x.reduce((a, v, i) => a + v * y[i], 0)
        : b.map === 'x*x' && b.op === 'sum' ? x.reduce((a, v) => a + v * v, 0) : NaN;
    const plain = await (await route.fetch({ postData: JSON.stringify({ family: b.family, type: b.type, op: 'sum', data: b.data }) })).json();
    await route.fulfill({ json: { ...plain, op: b.op, value } });
  }
  return { families, reduce, sent };
}
