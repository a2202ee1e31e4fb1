// axe.mjs — axe-core's WCAG 2 A and AA rules on the playground (clients/web/) in headless Chromium, in each
// state the page shows: after its first run, with every panel open, stepping, beside its CUDA equivalent,
// with an error, on a phone with the data families' fields, with a histogram, and asking for a token. Run by
// tests/lint/run.sh, which starts the daemons and sets WARPD_URL (and WARPD_TOKEN_URL: a daemon with
// --token-file). A new widget is checked once it shows in one of these states. Prints one line per state
// (the violations in full) and ends with "axe: N passed, N failed".
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { dataFamilyRoutes } from '../web/canned.mjs';

const require = createRequire(import.meta.url);
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
// WCAG 2.0, 2.1 and 2.2 at levels A and AA (axe's tags); best practices and AAA are not asked for.
const WCAG_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
const BASE = process.env.WARPD_URL;
const TOKEN_URL = process.env.WARPD_TOKEN_URL;
const SETTLE_MS = 30_000;

async function settle(page) {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: SETTLE_MS });
}
async function open(page, url) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: SETTLE_MS });
  await settle(page);
}
async function rerun(page, action) {
  await page.evaluate(() => { document.body.dataset.state = 'waiting'; });
  await action();
  await settle(page);
}

// name -> what brings the page into that state
const states = {
  'first run': async (page) => open(page, BASE + '/'),
  'every panel open': async (page) => {
    await open(page, BASE + '/#family=warp_allreduce&type=f32&width=16&op=max&input=iota&lanes=32&active=0x0000ffff');
    for (const box of ['#table-box', '#request-box', '#source-box']) await page.click(`${box} summary`);
    await page.waitForFunction(() => document.getElementById('source-meta').textContent !== '', null, { timeout: SETTLE_MS });
  },
  'stepping': async (page) => {
    await open(page, BASE + '/');
    await rerun(page, () => page.selectOption('#preset', 'allreduce-sum')); // opens in step-through
    await page.waitForSelector('#step-nav:not([hidden])');
  },
  'beside its CUDA equivalent': async (page) => {
    await open(page, BASE + '/');
    await rerun(page, () => page.selectOption('#preset', 'ds-permute'));
    await page.waitForSelector('#compare:not([hidden])');
  },
  'an error': async (page) => {
    await open(page, BASE + '/');
    await page.fill('#mask', '0xzz');
    await page.press('#mask', 'Enter');
    await page.waitForSelector('#error:not([hidden])');
  },
  // data families: on a phone with ddof, a map and a second input; a histogram (what the daemon lacks of them is
  // answered by page.route, as in the web tests: ../web/canned.mjs)
  'on a phone (390 px): var with ddof, a map, a second input': async (page) => {
    await routeDataFamilies(page);
    await page.setViewportSize({ width: 390, height: 844 });
    await open(page, BASE + '/#family=device_reduce&type=f32&width=32&op=var&input=iota&lanes=32&ddof=1&y=values&yvalues=1');
    for (const box of ['#table-box', '#request-box']) await page.click(`${box} summary`);
    await page.waitForSelector('#data2-field:not([hidden])');
  },
  'a histogram': async (page) => {
    await routeDataFamilies(page);
    await open(page, BASE + '/#family=histogram&type=f32&width=32&arg.bins=6&input=random&lanes=64&seed=3');
    await page.click('#table-box summary');
    await page.waitForSelector('#diagram svg.histogram');
  },
  'asking for its token': async (page) => {
    await page.goto(TOKEN_URL + '/');
    await page.waitForSelector('#token-dialog[open]');
    await page.fill('#token-input', 'not-the-token-0123456789');
    await page.click('#token-dialog button[type=submit]');
    await page.waitForSelector('#token-error:not([hidden])');
  },
};

async function routeDataFamilies(page) {
  const r = dataFamilyRoutes();
  await page.route('**/v1/families', r.families);
  await page.route('**/v1/reduce', r.reduce);
}

function describe(v) {
  const nodes = v.nodes.map((n) => `      ${n.target.join(' ')}: ${n.failureSummary.replace(/\s*\n\s*/g, '; ')}`);
  return [`    ${v.id} (${v.impact}): ${v.help} — ${v.helpUrl}`, ...nodes].join('\n');
}

let passed = 0;
let failed = 0;
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'warpd-lint-'));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  for (const [name, reach] of Object.entries(states)) {
    const page = await ctx.newPage();
    const t0 = Date.now();
    try {
      await reach(page);
      await page.evaluate(AXE_SOURCE); // through the debugger: the page's CSP allows no inline script
      const r = await page.evaluate((tags) => window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }), WCAG_AA);
      if (r.violations.length === 0) {
        passed++;
        console.log(`ok   ${name} (${r.passes.length} rules pass, ${r.incomplete.length} for a person to review; ${Date.now() - t0} ms)`);
      } else {
        failed++;
        console.log(`FAIL ${name}: ${r.violations.length} WCAG AA violation(s)\n${r.violations.map(describe).join('\n')}`);
      }
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: the page did not reach this state: ${e.message.split('\n')[0]}`);
    } finally {
      await page.close();
    }
  }
} finally {
  await ctx.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(`axe: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
