// End-to-end: a serving capture's iterations on the Overview, as `ttap analyze --format json`
// has them: the generated vLLM capture (scripts/serving_trace.py: 2 prefill, 6 decode, 1 mixed
// iterations), also through its share link (the figures per kind), and the real vLLM piecewise
// prefill+decode capture (one mixed iteration); a training trace has no serving table. The
// findings of a serving capture count per iteration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { servedSite, openPage, load, lacksTrace, analyze, cli, ROOT, SHOTS, SHARED_TRACES } from './support.mjs';

const GENERATED = join(ROOT, 'tests/fixtures/vllm-serving.pt.trace.json');
const EAGER = join(ROOT, 'tests/fixtures/vllm-serving-eager.pt.trace.json');
const REAL = join(SHARED_TRACES,
  'AMD-AGI__TraceLens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz');
const SAMPLE = join(ROOT, 'www/samples/resnet50-a100-dataloader.pt.trace.json.gz');

const served = servedSite();

/** The Overview's serving table for `trace` (opened, or its share link with `viaLink`), its
 * rows as cell texts. */
async function shownRows(trace, shot, viaLink = false) {
  let url = served.site.url;
  if (viaLink) {
    const made = spawnSync(cli(), ['share', trace, '--base-url', url], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    url = made.stdout.trim();
  }
  const { page, context, errors } = await openPage(served.browser, url);
  if (!viaLink) await load(page, () => page.setInputFiles('#file-input', trace));
  await page.click('.tab:has-text("Overview")');
  const table = page.locator('.serving');
  await table.waitFor();
  const rows = await table.locator('tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  const heading = await table.locator('h3').innerText();
  const steps = await page.locator('.fact', { hasText: 'Steps' }).locator('dd').innerText();
  if (shot) await page.screenshot({ path: join(SHOTS, shot), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
  return { rows, heading, steps };
}

/** The cells the CLI's figures of one kind make. */
function expected(k) {
  const line = (s) => (s.n > 1
    ? `${s.mean_ms.toFixed(3)} ± ${s.sd_ms.toFixed(3)} ms (${s.min_ms.toFixed(3)}–${s.max_ms.toFixed(3)})`
    : `${s.mean_ms.toFixed(3)} ms`);
  return [
    k.kind ?? 'untyped',
    String(k.time.n),
    line(k.time),
    `${k.gpu_busy_pct.toFixed(1)}%`,
    k.host_gap ? line(k.host_gap) : '-',
    k.graph_replays_per_iteration.toFixed(1),
    k.tokens_per_s == null ? '-' : k.tokens_per_s.toFixed(0),
  ];
}

test('a generated vLLM capture: its iterations by kind, as the CLI has them', async () => {
  const { serving } = analyze(GENERATED).report;
  assert.deepEqual(serving.kinds.map((k) => [k.kind, k.time.n]), [['prefill', 2], ['decode', 6], ['mixed', 1]]);
  const { rows, heading, steps } = await shownRows(GENERATED, 'serving-generated.png');
  assert.equal(heading, 'Serving iterations (9)');
  assert.match(steps, /^9 \(9 steady, 0 warm-up\), no ProfilerStep: a serving engine's iterations/);
  // Tokens per second aside (JS and Rust may round a half differently), the cells are the CLI's.
  assert.deepEqual(rows.map((r) => r.slice(0, 6)), serving.kinds.map((k) => expected(k).slice(0, 6)));
  rows.forEach((r, i) => assert.ok(Math.abs(Number(r[6]) - serving.kinds[i].tokens_per_s) <= 1, r[6]));
  // Its share link carries the same figures per kind.
  const shared = await shownRows(GENERATED, 'serving-link.png', true);
  assert.equal(shared.heading, 'Serving iterations (9)');
  assert.deepEqual(shared.rows, rows);
});

test('the timeline of a serving capture draws its iterations (labelled by kind: tests/serving.rs)', async () => {
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', GENERATED));
  await page.click('.tab:has-text("Timeline")');
  await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 60_000 });
  await page.screenshot({ path: join(SHOTS, 'serving-timeline.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the findings of a serving capture count per iteration', async () => {
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', EAGER));
  await page.click('.tab:has-text("Findings")');
  const card = page.locator('#finding-launch-bound-small-kernels');
  await card.waitFor();
  assert.match(await card.locator('.impact').innerText(), / per iteration \(/);
  assert.match(await card.locator('.gate').innerText(), /holds in 6 of 6 steady iterations/);
  assert.match(await card.locator('.summary').innerText(), /kernels per iteration/);
  assert.match(await card.locator('.finding-window').innerText(), /^Where: iteration \d+,/);
  assert.match(await card.locator('.evidence').innerText(), / · iterations 4–9/);
  assert.doesNotMatch(await card.innerText(), /\bsteps?\b \d| per step/);
  assert.equal(await page.locator('.split h3').innerText(), "Where an iteration's time goes");
  await page.screenshot({ path: join(SHOTS, 'serving-findings.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the real vLLM piecewise capture: one mixed iteration', async (t) => {
  if (lacksTrace(t, REAL)) return;
  const { serving } = analyze(REAL).report;
  const { rows } = await shownRows(REAL, 'serving-vllm-piecewise.png');
  assert.equal(rows.length, 1);
  assert.deepEqual(rows[0].slice(0, 6), expected(serving.kinds[0]).slice(0, 6));
  assert.equal(rows[0][0], 'mixed');
  assert.equal(rows[0][5], '25.0');
});

test('a training trace has no serving table', async () => {
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', SAMPLE));
  await page.click('.tab:has-text("Overview")');
  await page.waitForSelector('.overview');
  assert.equal(await page.locator('.serving').count(), 0);
  assert.deepEqual(errors, []);
  await context.close();
});
