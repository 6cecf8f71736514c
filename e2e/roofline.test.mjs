// End-to-end: the Roofline tab on a real MI300X ResNet-18 training trace that records shapes (the
// chart's points, roofs and table as `ttap analyze --format json` has the roofline), its step MFU
// carried by a share link; a device the peaks table cannot tell (achieved rates only); and the
// bundled sample (no shapes) saying why it has no roofline; a vLLM graph capture whose MFU is a
// lower bound and says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { servedSite, openPage, load, lacksTrace, cli, ROOT, SHOTS, SHARED_TRACES } from './support.mjs';

const TRACE = join(SHARED_TRACES, 'AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz');
const UNKNOWN = join(SHARED_TRACES, 'facebookresearch__HolisticTraceAnalysis/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz');
const SAMPLE = join(ROOT, 'www/samples/resnet50-a100-dataloader.pt.trace.json.gz');
const VLLM = join(SHARED_TRACES, 'AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz');

const served = servedSite();

/** The roofline `ttap analyze` reports for `trace`. */
function roofline(trace) {
  const made = spawnSync(cli(), ['analyze', '--format', 'json', trace], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(made.status, 0, made.stderr);
  return JSON.parse(made.stdout)[0].report.roofline;
}

/** A share link to `trace` served by this test's site. */
function link(trace) {
  const made = spawnSync(cli(), ['share', trace, '--base-url', served.site.url], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  return made.stdout.trim();
}

const pct = (v) => `${(100 * v).toFixed(1)}%`;

test('the roofline of a real MI300X trace with shapes: points, roofs and table as the CLI has them', async (t) => {
  if (lacksTrace(t, TRACE)) return;
  const r = roofline(TRACE);
  assert.ok(r.peaks && r.kernels.length > 0 && r.mfu > 0, JSON.stringify(r).slice(0, 300));
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', TRACE), 300_000);
  await page.click('.tab:has-text("Roofline")');
  await page.waitForSelector('.roofline');

  // One point per kernel that did FLOPs; those without are said to be in the table only.
  const plotted = r.kernels.filter((k) => k.tflops > 0 && k.intensity > 0);
  assert.ok(plotted.length > 0 && plotted.length < r.kernels.length, 'the trace has kernels on and off the chart');
  const titles = await page.locator('.roofline-chart circle.point title').allTextContents();
  assert.equal(titles.length, plotted.length);
  assert.deepEqual(titles.map((s) => s.split('\n')[0]).sort(), plotted.map((k) => k.name).sort());
  const first = plotted[0];
  const tip = titles.find((s) => s.startsWith(`${first.name}\n${first.op} (`));
  assert.match(tip, new RegExp(`${first.tflops.toFixed(2)} TFLOP/s, ${first.gbps.toFixed(1)} GB/s`));
  assert.match(tip, new RegExp(`${pct(first.share).replace('.', '\\.')} of its roofline \\(${first.bound}-bound\\)`));
  assert.match(await page.locator('.roofline-off').innerText(),
    new RegExp(`^${r.kernels.length - plotted.length} of the ${r.kernels.length} kernels do no FLOPs`));
  // The memory slope and one ceiling per precision the device has.
  assert.equal(await page.locator('.roofline-chart line.roof.memory').count(), 1);
  const ceilings = [r.peaks.fp32_tflops, r.peaks.tf32_tflops, r.peaks.fp16_tflops, r.peaks.fp8_tflops].filter((v) => v != null);
  assert.equal(await page.locator('.roofline-chart line.roof.compute').count(), ceilings.length);

  // The table: the report's kernels in its order (most time lost first).
  const rows = await page.locator('.roofline table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  assert.equal(rows.length, r.kernels.length);
  for (const [k, row] of rows.slice(0, 3).entries()) {
    const want = r.kernels[k];
    assert.deepEqual(row.slice(0, 5), [want.name, want.op, want.dtype, want.bound, want.calls.toLocaleString('en-US')], `row ${k + 1}`);
    assert.equal(row[6], want.tflops.toFixed(2), `row ${k + 1}: TFLOP/s`);
    assert.equal(row[9], pct(want.share), `row ${k + 1}: share of roofline`);
  }

  // Coverage, the device's peaks, the step MFU.
  const c = r.coverage;
  assert.match(await page.locator('.roofline-coverage').innerText(),
    new RegExp(`^Shapes recorded for ${pct(c.shapes_ms / c.kernel_ms).replace('.', '\\.')} of GPU kernel time`));
  assert.match(await page.locator('.roofline-device').innerText(), new RegExp(`peaks of the ${r.peaks.device} from`));
  assert.match(await page.locator('.roofline-mfu').innerText(), new RegExp(`^Step MFU ${pct(r.mfu).replace('.', '\\.')} `));
  await page.locator('.roofline').screenshot({ path: join(SHOTS, 'roofline-mi300-resnet18.png') });
  assert.deepEqual(errors, []);
  await context.close();

  // Its share link carries the step MFU, shown with the shared report's facts.
  const shared = await openPage(served.browser, link(TRACE));
  await shared.page.click('.tab:has-text("Overview")');
  const fact = shared.page.locator('.fact', { hasText: 'Step MFU' });
  assert.equal(await fact.locator('dd').innerText(), pct(r.mfu));
  assert.equal(await shared.page.locator('.tab:has-text("Roofline")').count(), 0, 'a link carries no kernels');
  assert.deepEqual(shared.errors, []);
  await shared.context.close();
});

test('a generic device its properties cannot tell apart: achieved rates only, no roofs, no MFU', async (t) => {
  if (lacksTrace(t, UNKNOWN)) return;
  const r = roofline(UNKNOWN);
  assert.equal(r.peaks, null);
  assert.equal(r.device, 'AMD Radeon Graphics');
  assert.deepEqual(r.ambiguous, ['MI210', 'MI250 (GCD)']);
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', UNKNOWN));
  await page.click('.tab:has-text("Roofline")');
  assert.match(await page.locator('.roofline-device').innerText(),
    /^AMD Radeon Graphics: its properties \(104 CUs, 64 GiB, arch 9\.0\) fit MI210, MI250 \(GCD\), ambiguous: achieved rates only, without roofs, roofline shares or MFU\.$/);
  const plotted = r.kernels.filter((k) => k.tflops > 0 && k.intensity > 0);
  assert.ok(plotted.length > 0);
  assert.equal(await page.locator('.roofline-chart circle.point.achieved').count(), plotted.length);
  assert.equal(await page.locator('.roofline-chart .roof, .roofline-mfu').count(), 0);
  // Ranked by time, as the report ranks them without peaks; no share, nothing lost.
  assert.equal(await page.locator('.roofline .table-head h2').innerText(), 'Kernels with counted work, by time');
  const rows = await page.locator('.roofline table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  assert.deepEqual(rows.map((row) => row[0]), r.kernels.map((k) => k.name));
  assert.ok(rows.every((row) => row[3] === '-' && row[9] === '-' && row[10] === '-'), JSON.stringify(rows[0]));
  await page.locator('.roofline').screenshot({ path: join(SHOTS, 'roofline-unknown-device.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the bundled sample records no shapes: the Roofline tab says so, and its link has no MFU', async () => {
  const r = roofline(SAMPLE);
  assert.equal(r.coverage.shapes_ms, 0);
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.click('#sample'));
  await page.click('.tab:has-text("Roofline")');
  assert.match(await page.locator('.roofline-none').innerText(), /records no operator shapes.*record_shapes=True/);
  assert.equal(await page.locator('.roofline-chart, .roofline table').count(), 0);
  assert.match(await page.locator('.roofline-coverage').innerText(), /^Shapes recorded for 0\.0% of GPU kernel time/);
  await page.click('.tab:has-text("Overview")');
  assert.equal(await page.locator('.fact', { hasText: 'Step MFU' }).count(), 0);
  assert.deepEqual(errors, []);
  await context.close();

  const shared = await openPage(served.browser, link(SAMPLE));
  await shared.page.click('.tab:has-text("Overview")');
  assert.equal(await shared.page.locator('.fact', { hasText: 'Step MFU' }).count(), 0);
  await shared.context.close();
});

test('graph replays with no operator: the MFU says it is a lower bound, on the page and in its link', async (t) => {
  if (lacksTrace(t, VLLM)) return;
  const r = roofline(VLLM);
  assert.ok(r.mfu != null && r.mfu_uncounted > 0.5, JSON.stringify(r.coverage));
  const bound = `at least ${pct(r.mfu)}`;
  const why = `Matrix, convolution or attention kernels without FLOPs counted run ${(100 * r.mfu_uncounted).toFixed(0)}% of kernel time: the MFU counts only the FLOPs it knows.`;
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', VLLM), 300_000);
  await page.click('.tab:has-text("Roofline")');
  const line = await page.locator('.roofline-mfu').innerText();
  assert.ok(line.startsWith(`Step MFU ${bound} (`) && line.endsWith(why), line);
  await page.locator('.roofline').screenshot({ path: join(SHOTS, 'roofline-vllm-lower-bound.png') });
  await page.click('.tab:has-text("Overview")');
  assert.equal(await page.locator('.fact', { hasText: 'Step MFU' }).locator('dd').innerText(), bound);
  assert.deepEqual(errors, []);
  await context.close();

  const shared = await openPage(served.browser, link(VLLM));
  await shared.page.click('.tab:has-text("Overview")');
  assert.equal(await shared.page.locator('.fact', { hasText: 'Step MFU' }).locator('dd').innerText(), bound);
  assert.deepEqual(shared.errors, []);
  await shared.context.close();
});
