// End-to-end: memory over time on a real A100 trace recorded with profile_memory=True: the
// Overview's memory table as `ttap analyze --format json` has it, the timeline's memory track
// drawn with its peak marked, and a click on the peak showing its operator and bytes; a trace
// without memory events says how to record them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { servedSite, openPage, load, lacksTrace, analyze, SHOTS, SHARED_TRACES } from './support.mjs';

const TRACE = join(SHARED_TRACES, 'harryjmoss__particle_transformer',
  'run1_chrome_traces__single_epoch_forward_pass_batch_size_512.json');
const WITHOUT = join(SHARED_TRACES, 'AMD-AGI__TraceLens/tests__traces__b200__eager_trace.json.gz');

const served = servedSite();

const canvas = (page) => page.locator('canvas.timeline-canvas');

/** The memory peaks the last frame drew, `[x, y]` in the canvas's CSS pixels. */
async function peaks(page) {
  const marks = await canvas(page).getAttribute('data-memory-peaks');
  return marks ? marks.split(';').map((p) => p.split(',').map(Number)) : [];
}

test('a real trace with memory events: the table, the track, and its peak\'s operator', async (t) => {
  if (lacksTrace(t, TRACE)) return;
  const { memory } = analyze(TRACE).report;
  const gpu = memory.devices[0];
  assert.equal(gpu.device, 'cuda:0');
  assert.ok(gpu.op && gpu.peak_allocated > 0, JSON.stringify(gpu));
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', TRACE));

  // The Overview: the CLI's table, one row per device.
  await page.click('.tab:has-text("Overview")');
  const rows = await page.locator('.memory-summary tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  assert.equal(rows.length, memory.devices.length);
  assert.equal(rows[0][0], 'cuda:0');
  assert.equal(rows[0][4], gpu.op);
  assert.match(rows[0][3], /^31\.\d% of 39\.4 GiB$/);

  // The timeline: scroll down the tracks, clicking each memory peak drawn (the host's track
  // comes first), until the GPU's shows; its panel gives the operator and bytes.
  await page.click('.tab:has-text("Timeline")');
  await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 60_000 });
  const box = await canvas(page).boundingBox();
  const panel = page.locator('.memory-peak');
  const heading = 'Peak of memory, cuda:0';
  let clicked = 0;
  for (let k = 0; k < 60; k++) {
    for (const [x, y] of await peaks(page)) {
      assert.ok(x > 200 && y > 0, `the peak is drawn in the tracks: ${x},${y}`);
      await page.mouse.click(box.x + x, box.y + y + 2);
      await panel.waitFor();
      clicked += 1;
      if ((await panel.locator('h3').innerText()) === heading) break;
    }
    if (clicked > 0 && (await panel.locator('h3').innerText()) === heading) break;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, 120);
    await page.waitForTimeout(150);
  }
  assert.equal(await panel.locator('h3').innerText(), heading);
  assert.equal(await panel.locator('.peak-op').innerText(), gpu.op);
  assert.equal(await panel.locator('.peak-bytes').innerText(),
    `${(gpu.peak_allocated / 2 ** 30).toFixed(1)} GiB`);
  await page.screenshot({ path: join(SHOTS, 'memory-track.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a trace without memory events says how to record them', async (t) => {
  if (lacksTrace(t, WITHOUT)) return;
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', WITHOUT));
  await page.click('.tab:has-text("Overview")');
  assert.equal(await page.locator('.memory-summary').innerText(),
    'No memory events (record with profile_memory=True).');
  assert.deepEqual(errors, []);
  await context.close();
});
