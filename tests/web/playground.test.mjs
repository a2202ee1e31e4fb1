// playground.test.mjs — the playground (clients/web/) in headless Chromium against a live daemon.
// Run by tests/web/run.sh, which starts build/warpd and sets WARPD_URL. Expected lane values come
// from formulas here, not from the page or the emulator. Screenshots land in tests/web/out/.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { STAT_OPS, dataFamilyRoutes } from './canned.mjs';

const BASE = process.env.WARPD_URL || 'http://127.0.0.1:8080';
// a second daemon, started with --token-file (run.sh): the playground must ask for its token
const TOKEN_URL = process.env.WARPD_TOKEN_URL;
const TOKEN = process.env.WARPD_TEST_TOKEN;
const WARPD_BIN = process.env.WARPD_BIN; // for a daemon of a test's own (CORS)
const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = process.env.WEB_OUT || path.join(HERE, 'out');
const T = { timeout: 60_000 };
fs.mkdirSync(OUT, { recursive: true });

let ctx, profile, page, problems, families;

before(async () => {
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'warpd-web-'));
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  // Every page records the Content-Security-Policy violations it sees (checked after each test).
  await ctx.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  // the families the playground offers: warp primitives and data jobs with an endpoint (datajob.js)
  families = (await (await fetch(BASE + '/v1/families')).json()).families.filter((f) => !f.data || /^\/v1\//.test(f.data.endpoint));
});
after(async () => {
  await ctx?.close();
  fs.rmSync(profile, { recursive: true, force: true });
});
beforeEach(async () => {
  page = await ctx.newPage();
  problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
});
afterEach(async () => {
  const csp = page ? await page.evaluate(() => window.__csp).catch(() => []) : [];
  await page?.close();
  assert.deepEqual(csp, [], 'the page broke its Content-Security-Policy');
});

// ---------------------------------------------------------------- helpers
async function settle(p = page) {
  await p.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 30_000 });
}
/** Does something that starts a run and waits for it to finish. */
async function runBy(action, p = page) {
  await p.evaluate(() => { document.body.dataset.state = 'waiting'; });
  await action();
  await settle(p);
  const err = await p.evaluate(() => (document.getElementById('error').hidden ? '' : document.getElementById('error').textContent));
  return err;
}
async function open(hash = '') {
  await page.goto(BASE + '/' + hash);
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  await settle();
}
const outs = (p = page) => p.$$eval('#diagram svg.diagram g.lane.out', (gs) => gs.map((g) => ({
  lane: Number(g.dataset.lane), value: JSON.parse(g.dataset.value), defined: g.dataset.defined === 'true',
  reason: g.dataset.reason || null, group: g.dataset.group || null })));
const ins = (p = page) => p.$$eval('#diagram svg.diagram g.lane.in', (gs) => gs.map((g) => JSON.parse(g.dataset.value)));
const arrows = (p = page) => p.$$eval('#diagram svg.diagram path.arrow:not(.lost)', (ps) => ps.map((a) => [Number(a.dataset.src), Number(a.dataset.dst)]));
const shot = (name, p = page) => p.screenshot({ path: path.join(OUT, name + '.png') });
function noProblems() {
  assert.deepEqual(problems, [], 'the page logged errors');
}
function byLane(list) {
  const m = new Map();
  for (const o of list) m.set(o.lane, o);
  return m;
}

// ---------------------------------------------------------------- tests
test('loads, lists every family of /v1/families, and only presets whose family exists', T, async () => {
  await open();
  const names = await page.$$eval('#family option', (os) => os.map((o) => o.value));
  assert.deepEqual(names, families.map((f) => f.name));
  const presets = await page.$$eval('#preset option', (os) => os.map((o) => o.value).filter(Boolean));
  const { PRESETS } = await import(new URL('../../clients/web/presets.js', import.meta.url));
  const have = new Set(families.map((f) => f.name));
  assert.deepEqual(presets, PRESETS.filter((p) => have.has(p.family)).map((p) => p.id));
  if (!have.has('ds_permute')) assert.ok(!presets.includes('ds-permute'), 'a preset of a missing family is offered');
  assert.match(await page.textContent('#server'), /backend emu/);
  await shot('load');
  noProblems();
});

test('shfl_xor, width 16, lane mask 1: every output lane and every arrow', T, async () => {
  await open();
  await page.selectOption('#family', 'shfl_xor');
  await settle();
  await page.selectOption('#width', '16');
  await page.selectOption('#input-kind', 'iota');
  await page.fill('#lanes', '32');
  await page.fill('#arg-lane_mask', '1');
  const err = await runBy(() => page.press('#arg-lane_mask', 'Enter'));
  assert.equal(err, '');
  const o = await outs();
  assert.equal(o.length, 32);
  for (let t = 0; t < 32; t++) {
    assert.equal(o[t].lane, t);
    assert.equal(o[t].value, t ^ 1, `lane ${t}`);
    assert.equal(o[t].defined, true);
  }
  assert.deepEqual(await ins(), Array.from({ length: 32 }, (_, t) => t));
  const a = await arrows();
  assert.equal(a.length, 32, 'one arrow per lane');
  const seen = new Set();
  for (const [src, dst] of a) {
    assert.equal(src, dst ^ 1, `arrow into lane ${dst}`);
    seen.add(dst);
  }
  assert.equal(seen.size, 32);
  assert.equal(await page.$$eval('#diagram svg.diagram rect.segment', (r) => r.length), 2, 'two width-16 segments shaded');
  assert.match(await page.textContent('#sum-key'), /shfl_xor\/i32\/w16\/m0xffffffff\/sm_90/);
  assert.match(await page.textContent('#sum-backend'), /emu/);
  assert.match(await page.textContent('#sum-cache'), /memory|disk|compiled/);
  assert.match(await page.textContent('#sum-timing'), /kernel .*µs/);
  await shot('shfl_xor-w16-m1');
  noProblems();
});

// Expected outputs of each preset, from formulas (a few lanes each; most check all 32).
const iota = (n) => Array.from({ length: n }, (_, i) => i);
const PRESET_CHECKS = {
  broadcast: async (o) => {
    const inp = await ins();
    for (const t of [0, 3, 17, 31]) assert.equal(o.get(t).value, inp[3]);
    for (const [s] of await arrows()) assert.equal(s, 3);
  },
  'shift-up': async (o) => {
    for (const t of [0, 1, 5, 31]) assert.equal(o.get(t).value, Math.max(0, t - 1));
    assert.ok((await arrows()).some(([s, d]) => s === 4 && d === 5));
  },
  'shift-down': async (o) => {
    for (const t of [0, 10, 29, 30, 31]) assert.equal(o.get(t).value, t < 30 ? t + 2 : t);
  },
  rotate: async (o) => {
    for (const t of iota(32)) assert.equal(o.get(t).value, (t + 1) % 32);
    assert.ok((await arrows()).some(([s, d]) => s === 0 && d === 31));
  },
  butterfly: async (o) => {
    for (const t of [0, 5, 16, 31]) assert.equal(o.get(t).value, t ^ 16);
  },
  'xor-array': async (o) => {
    for (const t of [0, 1, 6, 31]) assert.deepEqual(o.get(t).value, [3 * (t ^ 1), 3 * (t ^ 1) + 1, 3 * (t ^ 1) + 2]);
  },
  swap: async (o) => {
    for (const t of [0, 1, 14, 31]) {
      const p = t ^ 1;
      assert.deepEqual(o.get(t).value, [4 * p + 3, 4 * t + 1, 4 * t + 2, 4 * p + 0]);
    }
  },
  'ballot-range': async (o) => {
    assert.equal(o.size, 128);
    let w1 = 0;
    for (let x = 43; x < 53; x++) w1 |= 1 << (x - 32);
    const hex = (v) => '0x' + (v >>> 0).toString(16).padStart(8, '0');
    for (const t of [0, 31, 64, 127]) assert.equal(o.get(t).value, '0x00000000');
    for (const t of [32, 45, 63]) assert.equal(o.get(t).value, hex(w1));
    const on = await page.$$eval('#diagram svg.diagram g.warp[data-warp="1"] rect.bit.on', (r) => r.map((x) => Number(x.dataset.lane)));
    assert.deepEqual(on, iota(10).map((i) => 43 + i));
  },
  'activemask-odd': async (o) => {
    for (const t of [0, 2, 30]) assert.equal(o.get(t).value, '0x55555555');
    for (const t of [1, 3, 31]) assert.deepEqual([o.get(t).defined, o.get(t).reason], [false, 'inactive']);
    assert.ok((await page.$$eval('#diagram svg.diagram text.why', (x) => x.map((e) => e.textContent))).includes('inactive'));
    assert.ok((await page.$$eval('#diagram svg.diagram g.lane.out rect.undef', (x) => x.length)) >= 16, 'undefined lanes hatched');
  },
  'allreduce-sum': async () => {
    // The preset opens in step-through mode on frame 1: offset 16, v = v + v^16.
    assert.match(await page.textContent('#step-label'), /frame 1\/5: offset 16/);
    const o1 = byLane(await outs());
    for (const t of [0, 7, 16, 31]) assert.equal(o1.get(t).value, t + (t ^ 16));
    for (const [s, d] of await arrows()) assert.equal(s, d ^ 16);
    await page.focus('#diagram');
    for (let k = 2; k <= 5; k++) await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => /frame 5\/5/.test(document.getElementById('step-label').textContent));
    assert.match(await page.textContent('#step-label'), /equals warp_allreduce's result/);
    const o5 = byLane(await outs());
    for (const t of [0, 13, 31]) assert.equal(o5.get(t).value, 496);
    await shot('preset-allreduce-sum-frame5');
    await page.click('#step-toggle');
    const fin = byLane(await outs());
    for (const t of iota(32)) assert.equal(fin.get(t).value, 496);
  },
  'allreduce-max': async () => {
    await page.click('#step-toggle'); // back to the family's own result
    const inp = await ins();
    const o = byLane(await outs());
    const max = Math.max(...inp);
    for (const t of [0, 9, 31]) assert.equal(o.get(t).value, max);
  },
  'match-groups': async (o) => {
    const hex = (v) => '0x' + (v >>> 0).toString(16).padStart(8, '0');
    for (const t of [0, 1, 2, 3, 30]) assert.equal(o.get(t).value, hex(0x11111111 << (t % 4)));
    assert.equal(new Set([...o.values()].map((x) => x.group)).size, 4, 'four colour groups');
  },
  'vote-any': async (o) => {
    for (const t of [0, 17, 31]) assert.equal(o.get(t).value, true);
    // the "pred" row: each lane's predicate (x == 17), from the response's lane_pred
    const pred = await page.$$eval('#diagram svg.diagram rect.pred', (r) => r.map((x) => JSON.parse(x.dataset.value)));
    assert.deepEqual(pred, iota(32).map((t) => t === 17));
  },
  // Lane i names lane i+1 (63 wraps to 0) and lane 40 names lane 6 too (presets.js PERMUTE_ADDR).
  'warp-reduce': async () => {
    assert.match(await page.textContent('#step-label'), /frame 1\/5: offset 16/);
    const o1 = byLane(await outs());
    for (const t of [0, 7, 15]) assert.equal(o1.get(t).value, 2 * t + 16); // v + v[t+16]
    for (const [s, d] of (await arrows()).filter(([s, d]) => s !== d)) assert.equal(s, d + 16);
    await page.focus('#diagram');
    for (let k = 2; k <= 5; k++) await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => /frame 5\/5/.test(document.getElementById('step-label').textContent));
    assert.match(await page.textContent('#step-label'), /equals warp_reduce's result/);
    await page.click('#step-toggle');
    const fin = byLane(await outs());
    assert.deepEqual([fin.get(0).value, fin.get(0).defined, fin.get(1).reason], [496, true, 'partial']);
  },
  'warp-scan': async () => {
    await page.click('#step-toggle');
    const o = byLane(await outs());
    for (const t of iota(32)) assert.equal(o.get(t).value, (t * (t + 1)) / 2);
  },
  'moving-average': async (o) => {
    for (const t of [0, 1, 30, 31]) assert.equal(o.get(t).value, 0, `lane ${t}: the window leaves the array`);
    for (const t of [2, 9, 29]) assert.ok(Math.abs(o.get(t).value - t) < 1e-4, `lane ${t}: ${o.get(t).value}`);
    assert.match(await page.textContent('#request'), /\/v1\/scan/);
  },
  'ds-permute': async (o) => {
    for (const t of [1, 7, 33, 63]) assert.equal(o.get(t).value, t - 1);
    assert.deepEqual([o.get(0).value, o.get(6).value, o.get(41).value], [63, 40, 0]);
  },
  'ds-bpermute': async (o) => {
    for (const t of [0, 6, 39, 41, 62]) assert.equal(o.get(t).value, t + 1);
    assert.deepEqual([o.get(40).value, o.get(63).value], [6, 0]);
  },
};

const { PRESETS } = await import(new URL('../../clients/web/presets.js', import.meta.url));
for (const p of PRESETS) {
  test(`preset: ${p.name}`, T, async (t) => {
    if (!families.some((f) => f.name === p.family)) assert.fail(`preset family ${p.family} is missing from /v1/families`);
    await open();
    const err = await runBy(() => page.selectOption('#preset', p.id));
    assert.equal(err, '', `preset ${p.id} ran with an error`);
    assert.equal(await page.inputValue('#family'), p.family);
    const o = byLane(await outs());
    assert.ok(o.size > 0);
    if (PRESET_CHECKS[p.id]) await PRESET_CHECKS[p.id](o);
    else assert.ok([...o.values()].some((x) => x.defined), 'some lane defined');
    await shot('preset-' + p.id);
    noProblems();
  });
}

// The pair: the same byte addresses pushed and pulled over a 64-lane wave, each next to the CUDA
// __shfl_sync that does the same in 32-lane warps. Expected values are written from the ISA rules here.
test('permute preset pair: forward vs backward, next to __shfl_sync', T, async (t) => {
  for (const f of ['ds_permute', 'ds_bpermute']) if (!families.some((x) => x.name === f)) assert.fail(`${f} is missing from /v1/families`);
  const fam = Object.fromEntries(families.map((f) => [f.name, f]));
  assert.deepEqual([fam.ds_permute.backends, fam.ds_permute.widths, fam.ds_permute.wave], [['emu'], [32, 64], true]);
  const dst = (i) => (i === 40 ? 6 : (i + 1) % 64); // the lane each lane's address names
  const compareOuts = () => page.$$eval('#compare-diagram svg g.lane.out', (gs) => gs.map((g) => JSON.parse(g.dataset.value)));
  const differ = async () => (await page.getAttribute('#compare-diff', 'data-differ')).split(',').filter(Boolean).map(Number);

  // Forward: lane i writes lane dst(i); lanes 5 and 40 collide on lane 6, 40 wins; nobody writes 41.
  await open();
  assert.equal(await runBy(() => page.selectOption('#preset', 'ds-permute')), '');
  assert.deepEqual([await page.inputValue('#family'), await page.inputValue('#width')], ['ds_permute', '64']);
  let o = byLane(await outs());
  assert.equal(o.size, 64);
  const want = iota(64).map((d) => (d === 41 ? 0 : d === 6 ? 40 : (d + 63) % 64));
  for (const d of iota(64)) assert.deepEqual([o.get(d).value, o.get(d).defined], [want[d], true], `ds_permute lane ${d}`);
  assert.equal(await page.$$eval('#diagram svg.diagram g.warp', (g) => g.length), 1, 'one 64-lane wave, one panel');
  const pushed = (await arrows()).sort((a, b) => a[1] - b[1]);
  assert.deepEqual(pushed, iota(64).filter((d) => d !== 41).map((d) => [d === 6 ? 40 : (d + 63) % 64, d]));
  const lost = await page.$$eval('#diagram svg.diagram path.arrow.lost', (ps) => ps.map((a) => [Number(a.dataset.src), Number(a.dataset.dst)]));
  assert.deepEqual(lost, [[5, 6]], 'the losing write of the collision is drawn dashed');
  assert.match(await page.textContent('#sum-backend'), /emu/);
  // the CUDA equivalent: pull from the winner, in 32-lane warps
  assert.match(await page.textContent('#compare-title'), /__shfl_sync/);
  const srcF = iota(64).map((d) => (d === 41 ? 41 : d === 6 ? 40 : (d + 63) % 64)); // the shuffle's src_lane
  const cudaF = iota(64).map((d) => (d & ~31) + (srcF[d] % 32));
  assert.deepEqual(await compareOuts(), cudaF);
  assert.deepEqual(await differ(), [0, 6, 32, 41]);
  assert.match(await page.textContent('#compare-diff'), /other 32-lane half/);
  assert.match(await page.textContent('#compare-diff'), /nobody wrote/);
  await shot('preset-pair-ds-permute');

  // Backward: lane i reads lane dst(i).
  assert.equal(await runBy(() => page.selectOption('#preset', 'ds-bpermute')), '');
  o = byLane(await outs());
  for (const i of iota(64)) assert.equal(o.get(i).value, dst(i), `ds_bpermute lane ${i}`);
  assert.deepEqual((await arrows()).sort((a, b) => a[1] - b[1]), iota(64).map((i) => [dst(i), i]));
  assert.equal(await page.$$eval('#diagram svg.diagram path.arrow.lost', (p) => p.length), 0);
  const cudaB = iota(64).map((i) => (i & ~31) + (dst(i) % 32));
  assert.deepEqual(await compareOuts(), cudaB);
  assert.deepEqual(await differ(), [31, 40, 63]);
  // lane 40 reads lane 6: the same lane for both, lane 63's address 256 wraps to lane 0 of the wave
  assert.deepEqual([o.get(40).value, o.get(63).value], [6, 0]);
  await shot('preset-pair-ds-bpermute');
  noProblems();
});

test('URL state round-trips: a link reproduces the diagram', T, async () => {
  await open();
  await page.selectOption('#family', 'shfl');
  await settle();
  await page.selectOption('#type', 'f32');
  await page.selectOption('#width', '8');
  await page.fill('#mask', '0x0fffffff');
  await page.fill('#arg-src_lane', 'lane+3');
  await page.selectOption('#input-kind', 'random');
  await page.fill('#seed', '5');
  await page.fill('#active', '0xfffffff0');
  assert.equal(await runBy(() => page.click('#run')), '');
  const url = page.url();
  assert.match(url, /#family=shfl&type=f32&width=8&mask=0x0fffffff/);
  const first = await outs();
  const firstIn = await ins();
  assert.ok(first.some((x) => !x.defined), 'inactive lanes are undefined');
  const p2 = await ctx.newPage();
  p2.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  p2.on('console', (m) => { if (m.type() === 'error') problems.push(`console.error: ${m.text()}`); });
  await p2.goto(url);
  await p2.waitForFunction(() => document.body.dataset.ready === 'true');
  await settle(p2);
  for (const [id, v] of [['family', 'shfl'], ['type', 'f32'], ['width', '8'], ['mask', '0x0fffffff'], ['arg-src_lane', 'lane+3'],
    ['input-kind', 'random'], ['seed', '5'], ['active', '0xfffffff0']]) assert.equal(await p2.inputValue('#' + id), v, id);
  assert.deepEqual(await outs(p2), first);
  assert.deepEqual(await ins(p2), firstIn);
  assert.equal(p2.url(), url);
  await shot('url-roundtrip', p2);
  await p2.close();
  // Step-through frames are part of the state too.
  await open('#family=warp_allreduce&type=i32&width=32&op=sum&input=iota&lanes=32&step=2');
  await page.waitForFunction(() => /frame 2\/5/.test(document.getElementById('step-label').textContent));
  const o = byLane(await outs());
  for (const t of [0, 5, 31]) assert.equal(o.get(t).value, t + (t ^ 16) + (t ^ 8) + (t ^ 8 ^ 16));
  noProblems();
});

test('undefined lanes are hatched and labelled with their reason', T, async () => {
  await open('#family=shfl_xor&type=i32&width=32&mask=0x0000ffff&arg.lane_mask=16&input=iota&lanes=32');
  const o = await outs();
  for (let t = 0; t < 32; t++) {
    assert.equal(o[t].defined, false);
    assert.equal(o[t].reason, t < 16 ? 'src_not_member' : 'not_member');
  }
  const labels = await page.$$eval('#diagram svg.diagram text.why', (x) => x.map((e) => [e.textContent, Number(e.dataset.start), Number(e.dataset.end)]));
  assert.deepEqual(labels, [['src_not_member', 0, 15], ['not_member', 16, 31]]);
  assert.equal(await page.$$eval('#diagram svg.diagram g.lane.out rect.undef', (x) => x.length), 32);
  assert.equal(await page.$$eval('#diagram svg.diagram text.lane-no.off', (x) => x.length), 16, 'lanes outside the mask greyed');
  await shot('undefined-lanes');
  noProblems();
});

test('step-through agrees with the family when lanes are inactive', T, async () => {
  await open('#family=warp_allreduce&type=f32&width=16&op=max&input=random&lanes=32&seed=3&active=0xfffffff7&step=4');
  await page.waitForFunction(() => /frame 4\/4/.test(document.getElementById('step-label').textContent));
  assert.match(await page.textContent('#step-label'), /equals warp_allreduce's result/);
  const o = await outs();
  assert.equal(o[3].reason, 'inactive');
  assert.ok(o.slice(0, 16).every((x) => !x.defined), 'the segment with an inactive lane is undefined');
  assert.ok(o.slice(16).every((x) => x.defined));
  await shot('step-inactive');
  noProblems();
});

test('errors name the field: client-side and from the server', T, async () => {
  await open();
  await page.fill('#mask', '0xzz');
  await page.press('#mask', 'Enter');
  assert.match(await page.textContent('#error'), /bad_mask/);
  assert.equal(await page.getAttribute('#mask', 'aria-invalid'), 'true');
  await page.fill('#mask', '0xffffffff');
  await page.selectOption('#family', 'shfl_up');
  await settle();
  await page.fill('#arg-delta', '40');
  const err = await runBy(() => page.press('#arg-delta', 'Enter'));
  assert.match(err, /out_of_range.*args\.delta/);
  assert.equal(await page.getAttribute('#arg-delta', 'aria-invalid'), 'true');
  await shot('error');
  // a 400 from the server is shown, not logged as a page error; the browser's own network log line is expected
  problems = problems.filter((p) => !/status of 400/.test(p));
  noProblems();
});

test('keyboard: lane bits toggle with arrows and Space, Enter runs', T, async () => {
  await open('#family=shfl&type=i32&width=32&arg.src_lane=1&input=iota&lanes=32');
  await page.focus('#mask-bits button[data-lane="0"]');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Space');
  assert.equal(await page.inputValue('#mask'), '0xfffffffd');
  assert.equal(await page.getAttribute('#mask-bits button[data-lane="1"]', 'aria-pressed'), 'false');
  await page.focus('#mask');
  await runBy(() => page.keyboard.press('Enter'));
  const o = await outs();
  assert.equal(o[0].reason, 'src_not_member');
  assert.equal(o[1].reason, 'not_member');
  noProblems();
});

test('source panel: instantiation, PTX, registers', T, async () => {
  await open('#family=warp_allreduce&type=f32&width=16&op=max&input=iota&lanes=32');
  await page.click('#source-box summary');
  await page.waitForFunction(() => document.getElementById('source-meta').dataset.regs !== undefined, null, { timeout: 30_000 });
  const meta = await page.textContent('#source-meta');
  assert.match(meta, /wp_warp_allreduce<float, 16, 0xffffffffu, wp_op_max<float> >/);
  assert.ok(Number(await page.getAttribute('#source-meta', 'data-regs')) > 0);
  assert.match(meta, /spills: 0/);
  assert.match(await page.textContent('#source-text'), /wp_warp_allreduce|template/);
  await page.click('#source-tabs [data-tab="ptx"]');
  assert.match(await page.textContent('#source-text'), /\.version|\.entry/);
  await page.click('#source-tabs [data-tab="sass"]');
  assert.ok((await page.textContent('#source-text')).length > 0);
  await page.click('#source-tabs [data-tab="ptx"]');
  await page.evaluate(() => document.getElementById('source-box').scrollIntoView());
  await shot('source-panel');
  noProblems();
});

test('security headers: a strict CSP, no framing, no sniffing; the page breaks none of it', T, async () => {
  const resp = await page.goto(BASE + '/');
  const h = resp.headers();
  assert.match(h['content-security-policy'], /(^|; )default-src 'self'(;|$)/);
  assert.match(h['content-security-policy'], /frame-ancestors 'none'/);
  assert.doesNotMatch(h['content-security-policy'], /unsafe-inline|unsafe-eval/);
  assert.equal(h['x-frame-options'], 'DENY');
  assert.equal(h['x-content-type-options'], 'nosniff');
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  await settle();
  // no inline script, style or handler left in the page
  assert.equal(await page.$$eval('script:not([src])', (s) => s.length), 0, 'an inline <script>');
  assert.equal(await page.$$eval('style', (s) => s.length), 0, 'an inline <style>');
  assert.equal(await page.$$eval('[style]', (s) => s.length), 0, 'a style attribute');
  const handlers = await page.$$eval('*', (els) => els.flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => a.name)));
  assert.deepEqual(handlers, [], 'an inline event handler');
  // the legend's swatches, the diagram and the lane table are drawn under the policy
  await page.selectOption('#family', 'match_any');
  await settle();
  assert.ok(await page.$$eval('#legend .swatch', (s) => s.length) > 0, 'the legend has swatches');
  const browserCsp = await page.evaluate(() => window.__csp);
  assert.deepEqual(browserCsp, []);
  // a page of another site cannot frame it
  const framed = await ctx.newPage();
  await framed.setContent(`<iframe src="${BASE}/"></iframe>`, { waitUntil: 'load' }); // after the iframe's load or refusal
  const inner = framed.frames().find((f) => f !== framed.mainFrame());
  assert.ok(inner, 'the framing page has its iframe');
  const innerControls = await inner.evaluate(() => document.getElementById('controls') !== null).catch(() => false);
  assert.equal(innerControls, false, `the playground loaded inside another page's frame (${inner.url()})`);
  await framed.close();
  noProblems();
});

test('token: the playground asks for it once, keeps it in sessionStorage, runs, and asks again when refused', T, async () => {
  assert.ok(TOKEN_URL && TOKEN, 'run.sh sets WARPD_TOKEN_URL and WARPD_TEST_TOKEN');
  const statuses = [];
  page.on('response', (r) => { if (r.url().includes('/v1/')) statuses.push(r.status()); });
  await page.goto(TOKEN_URL + '/');
  await page.waitForSelector('#token-dialog[open]');
  assert.equal(await page.getAttribute('#token-dialog', 'data-asked'), '1', 'one dialog for the two calls at start');
  assert.ok(await page.isHidden('#token-error'));
  // a wrong token: refused, asked again, with a note
  await page.fill('#token-input', 'not-the-token-0123456789');
  await page.click('#token-dialog button[type=submit]');
  await page.waitForFunction(() => document.getElementById('token-dialog').dataset.asked === '2' && document.getElementById('token-dialog').open);
  assert.ok(await page.isVisible('#token-error'));
  await shot('token-dialog');
  await page.fill('#token-input', TOKEN);
  await page.click('#token-dialog button[type=submit]');
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  await settle();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('warpd-token')), TOKEN);
  assert.equal(await page.textContent('#user'), 'default · admin', "the header shows the token's user and role");
  assert.ok(!(await page.evaluate(() => document.getElementById('token-dialog').open)));
  assert.match(await page.textContent('#server'), /backend emu/);
  // runs with it, without asking again
  await page.selectOption('#family', 'shfl_xor');
  await settle();
  const err = await runBy(() => page.click('#run'));
  assert.equal(err, '');
  assert.equal((await outs()).length, 32);
  assert.equal(await page.getAttribute('#token-dialog', 'data-asked'), '2');
  assert.match(await page.textContent('#request'), /Authorization: Bearer \$WARPD_TOKEN/);
  assert.doesNotMatch(await page.textContent('#request'), new RegExp(TOKEN), 'the token is not shown');
  // a reload keeps it (same tab)
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  await settle();
  assert.equal(await page.getAttribute('#token-dialog', 'data-asked'), null, 'asked again after a reload');
  // the token is sent as a Bearer header; the daemon said 401 only before it was given
  const ok = statuses.filter((s) => s === 200).length;
  assert.ok(ok >= 3, `answers ${statuses}`);
  // the only console errors are the 401s the browser logs before the token is given
  assert.deepEqual(problems.filter((p) => !/status of 401/.test(p)), []);
  // cancel: the page says why it cannot go on
  await page.evaluate(() => sessionStorage.removeItem('warpd-token'));
  await page.reload();
  await page.waitForSelector('#token-dialog[open]');
  await page.click('#token-cancel');
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  assert.match(await page.textContent('#error'), /unauthorized/);
  assert.match(await page.textContent('#server'), /needs its token/);
  await shot('token-refused');
});

/** A page server on 127.0.0.1 (another origin than the daemon's): every path answers a blank page. */
async function pageServer() {
  const srv = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/html' }); res.end('<p>another app</p>'); });
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  return { srv, origin: `http://127.0.0.1:${srv.address().port}` };
}
/** Starts WARPD_BIN with flags; resolves to {proc, url} once it says where it listens. */
function startDaemon(dir, flags) {
  const proc = spawn(WARPD_BIN, ['--listen', '127.0.0.1:0', '--backend', 'emu', '--cache-dir', path.join(dir, 'cache'), ...flags],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((ok, fail) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) ok({ proc, url: m[1] });
    });
    proc.on('exit', (code) => fail(new Error(`warpd exited ${code}: ${out}`)));
  });
}

test('CORS: a page of an --allow-origin origin calls the API with the token; another origin cannot', T, async () => {
  assert.ok(WARPD_BIN, 'run.sh sets WARPD_BIN');
  const allowed = await pageServer(), other = await pageServer();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'warpd-cors-'));
  fs.writeFileSync(path.join(dir, 'token'), TOKEN + '\n');
  let d;
  try {
    d = await startDaemon(dir, ['--token-file', path.join(dir, 'token'), '--allow-origin', allowed.origin]);
    // what a page script of each origin gets: a preflighted POST with the token, and a plain GET
    const calls = (base, token) => page.evaluate(async ([b, t]) => {
      const out = {};
      try {
        const r = await fetch(b + '/v1/reduce', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t}` },
          body: JSON.stringify({ type: 'i32', op: 'sum', data: [1, 2, 3] }) });
        out.post = [r.status, (await r.json()).value ?? null];
      } catch (e) { out.post = String(e); }
      try { const r = await fetch(b + '/v1/info'); out.get = [r.status, r.headers.get('www-authenticate')]; } catch (e) { out.get = String(e); }
      return out;
    }, [base, token]);
    await page.goto(allowed.origin + '/');
    assert.deepEqual(await calls(d.url, TOKEN), { post: [200, 6], get: [401, 'Bearer realm="warpd"'] });
    const refused = await calls(d.url, 'not-the-token-0123456789');
    assert.equal(refused.post[0], 401);
    await page.goto(other.origin + '/');
    const foreign = await calls(d.url, TOKEN);
    assert.match(String(foreign.post), /TypeError/, 'another origin read a POST answer');
    assert.match(String(foreign.get), /TypeError/, 'another origin read a GET answer');
    // the browser logged the blocked calls and the 401s; nothing else
    assert.deepEqual(problems.filter((p) => !/CORS policy|status of 401|Failed to load resource|request failed/.test(p)), []);
  } finally {
    d?.proc.kill('SIGTERM');
    allowed.srv.close();
    other.srv.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------- data families: a phone, new ops and families
test('phone width (390×844): no horizontal scroll, the result under the form, before and after runs', T, async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  const fits = async (what) => {
    const [sw, form, result] = await page.evaluate(() => [document.documentElement.scrollWidth,
      document.getElementById('controls').getBoundingClientRect().toJSON(), document.getElementById('result').getBoundingClientRect().toJSON()]);
    assert.ok(sw <= 390, `${what}: the page is ${sw} px wide at 390`);
    assert.ok(result.top >= form.bottom, `${what}: the result pane (top ${result.top}) is not under the form (bottom ${form.bottom})`);
    assert.ok(result.left < 30 && result.right <= 390, `${what}: the result pane spans ${result.left}–${result.right}`);
  };
  // a link to a family this daemon lacks opens the default drawing (a warp shuffle), not a broken page
  await open(have('histogram') ? '' : '#family=histogram&type=f32&arg.bins=4');
  assert.equal(await page.inputValue('#family'), 'shfl_xor');
  assert.equal((await outs()).length, 32);
  await fits('the first page (shfl_xor)');
  // a reduce, with every panel open
  assert.equal(await runBy(() => page.selectOption('#family', 'device_reduce')), '');
  assert.equal(byLane(await outs()).get(0).value, 496);
  for (const box of ['#table-box', '#request-box']) await page.click(`${box} summary`);
  await fits('after a reduce');
  // a drawing wider than the screen scrolls inside its own box
  const box = await page.evaluate(() => { const d = document.getElementById('diagram'); return [d.scrollWidth, d.clientWidth]; });
  assert.ok(box[0] > box[1], `the lane diagram keeps its pitch and scrolls in its box (${box})`);
  assert.equal(await runBy(() => page.selectOption('#preset', 'butterfly')), '');
  await fits('after the butterfly shuffle');
  await shot('phone-390');
  noProblems();
});

const have = (name) => families.some((f) => f.name === name);
test('data families in the playground: statistics with ddof, map and dot, a histogram, reduce_by_key (canned answers)', T, async () => {
  // The daemon may not have these yet: what it lacks of the families list and their answers come from
  // page.route (canned.mjs), shaped as SHAPES.md says; what it has, it answers.
  const canned = dataFamilyRoutes(), sent = canned.sent;
  await page.route('**/v1/families', canned.families);
  await page.route('**/v1/reduce', canned.reduce);
  await open('#family=device_reduce&type=i32&width=32&op=sum&input=iota&lanes=32');
  const ops = await page.$$eval('#op-list option', (os) => os.map((o) => o.value));
  for (const op of [...STAT_OPS, 'dot']) assert.ok(ops.includes(op), `op ${op} offered`);
  const names = await page.$$eval('#family option', (os) => os.map((o) => o.value));
  assert.ok(names.includes('histogram') && names.includes('reduce_by_key'), 'the new families are offered');
  assert.ok(await page.isVisible('#transform-field'), 'device_reduce takes a map and a second input');

  // var with ddof 1 over 0..31: the sample variance, 88 (sum of (t - 15.5)² / 31)
  assert.ok(await page.isHidden('#ddof-field'));
  await page.fill('#op', 'var');
  assert.ok(await page.isVisible('#ddof-field'), 'ddof shows with var');
  await page.selectOption('#ddof', '1');
  assert.equal(await runBy(() => page.click('#run')), '');
  assert.deepEqual([sent.at(-1).op, sent.at(-1).ddof], ['var', 1]);
  assert.equal(byLane(await outs()).get(0).value, 88);
  assert.match(await page.textContent('#request'), /"op":"var","ddof":1/);
  assert.match(page.url(), /op=var&.*ddof=1/);
  // dot needs y: asked for, then sent as data2 (iota): Σ t² = 10416
  await page.fill('#op', 'dot');
  assert.ok(await page.isHidden('#ddof-field'));
  assert.match(await runBy(() => page.click('#run')), /data2.*second input/);
  assert.equal(await page.getAttribute('#data2-kind', 'aria-invalid'), 'true');
  await page.selectOption('#data2-kind', 'iota');
  assert.equal(await runBy(() => page.click('#run')), '');
  assert.deepEqual(sent.at(-1).data2, iota(32));
  assert.equal(sent.at(-1).ddof, undefined, 'ddof goes with var and std only');
  assert.equal(byLane(await outs()).get(0).value, 10416);
  // a map: sum of x*x over typed values
  await page.fill('#op', 'sum');
  await page.selectOption('#data2-kind', '');
  await page.fill('#map', 'x*x');
  await page.selectOption('#input-kind', 'values');
  await page.fill('#values', '1, 2, 3, 4');
  assert.equal(await runBy(() => page.click('#run')), '');
  assert.deepEqual([sent.at(-1).map, sent.at(-1).data, sent.at(-1).data2], ['x*x', [1, 2, 3, 4], undefined]);
  assert.equal(byLane(await outs()).get(0).value, 30);
  assert.match(page.url(), /&map=x\*x/);

  // histogram: 4 bins over [0, 8): bars, edges on the axis, totals in and out of range
  assert.equal(await runBy(() => page.selectOption('#family', 'histogram')), '');
  assert.ok(await page.isHidden('#transform-field'));
  await page.selectOption('#type', 'f32');
  await page.selectOption('#input-kind', 'values');
  const xs = [0, 1, 1.5, 2, 3.99, 4, 7.5, 8, 9, -1, 'NaN', 5];
  await page.fill('#values', xs.join(', '));
  await page.fill('#arg-bins', '4');
  await page.fill('#arg-lo', '0');
  await page.fill('#arg-hi', '8');
  assert.equal(await runBy(() => page.click('#run')), '');
  assert.deepEqual([sent.at(-1).bins, sent.at(-1).range, sent.at(-1).data.length], [4, [0, 8], 12]);
  const bars = await page.$$eval('#diagram svg.histogram g.bin', (gs) => gs.map((g) => [Number(g.dataset.lo), Number(g.dataset.hi), g.dataset.count,
    g.querySelector('rect').getBoundingClientRect().height]));
  // by bin: [0,2) 0 1 1.5; [2,4) 2 3.99; [4,6) 4 5; [6,8] 7.5 8 — out: 9, -1, NaN
  assert.deepEqual(bars.map((b) => b.slice(0, 3)), [[0, 2, '3'], [2, 4, '2'], [4, 6, '2'], [6, 8, '2']]);
  assert.ok(Math.abs(bars[0][3] / bars[1][3] - 1.5) < 0.01, `bar heights follow the counts (${bars.map((b) => b[3])})`);
  const edges = await page.$$eval('#diagram svg.histogram text.edge', (ts) => ts.map((t) => t.textContent));
  assert.deepEqual([edges[0], edges.at(-1)], ['0', '8']);
  assert.match(await page.textContent('#legend'), /^9 in range \[0, 8\] · 3 out of range/);
  assert.equal(await page.$$eval('#lane-table tbody tr', (r) => r.length), 4);
  assert.equal(await page.textContent('#table-box summary'), 'Bin table');
  await shot('histogram');

  // reduce_by_key: keys t/3 over 0..9 are runs 0 0 0 1 1 1 2 2 2 3; each run's sum 9k + 3 (the last: 9)
  assert.equal(await runBy(() => page.selectOption('#family', 'reduce_by_key')), '');
  await page.selectOption('#input-kind', 'iota');
  await page.fill('#lanes', '10');
  await page.fill('#arg-keys', 't/3');
  assert.equal(await runBy(() => page.click('#run')), '');
  assert.deepEqual(sent.at(-1).keys, { type: 'i32', data: [0, 0, 0, 1, 1, 1, 2, 2, 2, 3] });
  const runs = await page.$$eval('#diagram svg.runs g.run', (gs) => gs.map((g) => [g.dataset.key, Number(g.dataset.start), Number(g.dataset.end), JSON.parse(g.dataset.value)]));
  assert.deepEqual(runs, [0, 1, 2, 3].map((k) => [String(k), 3 * k, Math.min(9, 3 * k + 2), k < 3 ? 9 * k + 3 : 9]));
  assert.match(await page.textContent('#legend'), /^4 runs of equal consecutive keys over 10 elements/);
  await shot('reduce-by-key');
  // on a phone, the chart scrolls in its box and the page does not
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 390);
  noProblems();
});

test('datafields.js: the data-family fields of a request, as SHAPES.md writes them (no browser)', async () => {
  const { applyFields, takesMap, usesDdof, opsOf, chartKind, autoRange } = await import(new URL('../../clients/web/datafields.js', import.meta.url));
  const dr = { name: 'device_reduce', ops: ['sum', 'var'], data: { endpoint: '/v1/reduce', result: 'value' } };
  const hist = { name: 'histogram', data: { endpoint: '/v1/reduce', result: 'counts' } };
  const rbk = { name: 'reduce_by_key', ops: ['sum'], data: { endpoint: '/v1/reduce', result: 'runs', map: false } };
  const stencil = { name: 'stencil', data: { endpoint: '/v1/scan', result: 'each' } };
  const body = (f, s, y = null, data = [3, 1, 2]) => applyFields(f, { args: {}, ...s }, { family: f.name, type: 'f32', op: s.op, data }, y);
  // ddof only with var/std, only when 1; data last, data2 after it
  assert.deepEqual(Object.keys(body(dr, { op: 'var', ddof: 1 })), ['family', 'type', 'op', 'ddof', 'data']);
  assert.equal(body(dr, { op: 'sum', ddof: 1 }).ddof, undefined);
  assert.equal(body(dr, { op: 'var', ddof: 0 }).ddof, undefined);
  assert.deepEqual(Object.keys(body(dr, { op: 'dot', map: '' }, [4, 5, 6])), ['family', 'type', 'op', 'data', 'data2']);
  assert.equal(body(dr, { op: 'sum', map: 'x*x' }).map, 'x*x');
  assert.equal(body({ ...dr, data: { ...dr.data, map: false } }, { op: 'sum', map: 'x*x' }).map, undefined, 'no map where data.map is false');
  // the histogram: bins and range; an empty range is numpy's (min, max) of the finite values
  assert.deepEqual(body(hist, { args: { bins: '3', lo: '', hi: '' } }, null, [2, 'NaN', -1, 5]), { family: 'histogram', type: 'f32', bins: 3, range: [-1, 5], data: [2, 'NaN', -1, 5] });
  assert.deepEqual(autoRange([4, 4]), [3.5, 4.5]);
  assert.throws(() => body(hist, { args: { bins: '4', lo: 'x' } }), /lo/);
  // reduce_by_key: keys from a formula in t, i32
  assert.deepEqual(body(rbk, { op: 'sum', args: { keys: 't/2' } }, null, [1, 2, 3, 4, 5]).keys, { type: 'i32', data: [0, 0, 1, 1, 2] });
  assert.deepEqual(body(rbk, { op: 'sum', args: { keys: '7' } }, null, [1, 2]).keys, { type: 'i32', data: [7, 7] });
  // which family takes what
  assert.deepEqual([takesMap(dr), takesMap(hist), takesMap(rbk), takesMap(stencil)], [true, false, false, false]);
  assert.deepEqual([chartKind(dr), chartKind(hist), chartKind(rbk)], [null, 'histogram', 'runs']);
  assert.deepEqual(opsOf(dr), ['sum', 'var', 'dot']);
  assert.deepEqual([usesDdof('std'), usesDdof('mean'), usesDdof('mean', { stats: { ddof_ops: ['mean'] } })], [true, false, true]);
});
