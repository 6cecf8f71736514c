// End-to-end: the timeline, on real traces from ../shared/traces and on the bundled sample:
// zoom and pan with the keys, click a kernel and follow it to its launch, search, and move
// between a finding and its flagged window; a graph replay's kernels and its launch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { servedSite, openPage, load, lacksTrace, SHOTS, SHARED_TRACES } from './support.mjs';

const CNN_TRAINING = join(SHARED_TRACES, 'facebookresearch__HolisticTraceAnalysis',
  'tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz');
const MULTI_STREAM = join(SHARED_TRACES, 'AMD-AGI__TraceLens',
  'tests__traces__mi300__resnet_act_checkpoint.json.gz');
const HIP_GRAPH = join(SHARED_TRACES, 'AMD-AGI__TraceLens',
  'tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz');

const served = servedSite();

const canvas = (page) => page.locator('canvas.timeline-canvas');

/** Opens the Timeline tab and waits for its first frame. */
async function openTimeline(page) {
  await page.click('.tab:has-text("Timeline")');
  await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 60_000 });
}

/** Waits until the canvas has drawn more frames than `after`, then for the view to settle. */
async function drawnAfter(page, after) {
  await page.waitForFunction(
    (n) => Number(document.querySelector('canvas.timeline-canvas').dataset.draws) > n, after);
  await page.waitForTimeout(150);
}

/**
 * The `data-selected` of the frame drawn once the slice `id` is selected. The details show as
 * soon as the worker picks the slice; the canvas's marks follow the frame drawn after them, so
 * wait for that frame (up to 5 s) before the mark is read.
 */
async function selectedDrawn(page, id) {
  await page.waitForFunction(
    (s) => document.querySelector('canvas.timeline-canvas').dataset.selected === s, id,
    { timeout: 5000 }).catch(() => {});
  return canvas(page).getAttribute('data-selected');
}

/** A page with the shared trace at `path` on its timeline; null (the test skipped) without it. */
async function openShared(t, path) {
  if (lacksTrace(t, path)) return null;
  const opened = await openPage(served.browser, served.site.url);
  await load(opened.page, () => opened.page.setInputFiles('#file-input', path));
  await openTimeline(opened.page);
  return opened;
}

async function view(page) {
  const c = canvas(page);
  return {
    start: Number(await c.getAttribute('data-start')),
    end: Number(await c.getAttribute('data-end')),
    draws: Number(await c.getAttribute('data-draws')),
  };
}

async function holdKey(page, key, ms) {
  const before = (await view(page)).draws;
  await page.keyboard.down(key);
  await page.waitForTimeout(ms);
  await page.keyboard.up(key);
  await drawnAfter(page, before);
}

test('a CNN training trace: W/S zoom around the pointer, A/D pan, F fits, and nothing is dropped', async (t) => {
  const opened = await openShared(t, CNN_TRAINING);
  if (!opened) return;
  const { page, context, errors } = opened;
  const status = await page.locator('.timeline-status').innerText();
  // Every non-memory event of the trace is a slice (68,692 events less metadata and flows).
  const slices = Number(status.match(/^(\d+) slices/)[1]);
  assert.ok(slices > 45_000, status);
  await page.screenshot({ path: join(SHOTS, 'timeline-cnn-training.png') });

  const box = await canvas(page).boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + 200);
  await canvas(page).focus();
  const whole = await view(page);
  await holdKey(page, 'w', 400);
  const zoomed = await view(page);
  assert.ok(zoomed.end - zoomed.start < 0.5 * (whole.end - whole.start), 'W zooms in');
  // The time under the pointer stays put: it is at the same share of both views.
  const share = (v) => (0.6 * box.width - 200) / (box.width - 200) * (v.end - v.start) + v.start;
  const drift = Math.abs(share(zoomed) - share(whole)) / (whole.end - whole.start);
  assert.ok(drift < 0.01, `the pointer's time moved by ${drift}`);
  await holdKey(page, 'd', 300);
  const panned = await view(page);
  assert.ok(panned.start > zoomed.start, 'D pans right');
  assert.ok(Math.abs((panned.end - panned.start) - (zoomed.end - zoomed.start)) < 1e-6 * (zoomed.end - zoomed.start) + 1,
    'panning keeps the zoom');
  await holdKey(page, 'a', 300);
  assert.ok((await view(page)).start < panned.start, 'A pans left');
  await holdKey(page, 's', 200);
  assert.ok((await view(page)).end - (await view(page)).start > panned.end - panned.start, 'S zooms out');
  await page.screenshot({ path: join(SHOTS, 'timeline-cnn-zoomed.png') });
  // Ctrl + wheel zooms in; dragging pans.
  let before = (await view(page)).draws;
  const wide = await view(page);
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -300);
  await page.keyboard.up('Control');
  await drawnAfter(page, before);
  const wheeled = await view(page);
  assert.ok(wheeled.end - wheeled.start < wide.end - wide.start, 'Ctrl + wheel zooms in');
  before = wheeled.draws;
  await page.mouse.move(box.x + 700, box.y + 300);
  await page.mouse.down();
  await page.mouse.move(box.x + 500, box.y + 300, { steps: 4 });
  await page.mouse.up();
  await drawnAfter(page, before);
  assert.ok((await view(page)).start > wheeled.start, 'dragging left moves later in time');
  before = (await view(page)).draws;
  await page.keyboard.press('f');
  await drawnAfter(page, before);
  const fitted = await view(page);
  assert.ok(Math.abs((fitted.end - fitted.start) - (whole.end - whole.start)) < 1, 'F fits the whole trace again');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a kernel clicked on the canvas shows its details, and its launch is one click away, both ways', async (t) => {
  const opened = await openShared(t, CNN_TRAINING);
  if (!opened) return;
  const { page, context, errors } = opened;
  // Search finds the kernels by name and shows the first.
  await page.fill('#timeline-search', 'sgemm');
  await page.click('.timeline-search button[type=submit]');
  await page.waitForSelector('.timeline-found');
  const found = await page.locator('.timeline-found').innerText();
  const total = Number(found.match(/of (\d+)/)[1]);
  assert.ok(total > 10, found);
  await page.waitForSelector('canvas.timeline-canvas:not([data-selected-box=""])');
  const first = await canvas(page).getAttribute('data-selected');
  await page.click('.timeline-search button[title="Next match"]');
  await page.waitForFunction((f) => document.querySelector('canvas.timeline-canvas').dataset.selected !== f, first);
  assert.match(await page.locator('.timeline-found').innerText(), new RegExp(`^2 of ${total}`));

  // Clear the selection, then click the kernel where it was drawn.
  const [x, y, w, h] = (await canvas(page).getAttribute('data-selected-box')).split(',').map(Number);
  const selected = await canvas(page).getAttribute('data-selected');
  await canvas(page).focus();
  await page.keyboard.press('Escape');
  await page.waitForSelector('.timeline-details.empty');
  const box = await canvas(page).boundingBox();
  await page.mouse.click(box.x + x + Math.min(w / 2, 3), box.y + y + h / 2);
  await page.waitForSelector('.timeline-details .slice-name');
  assert.equal(await selectedDrawn(page, selected), selected, 'the click hits the kernel drawn there');
  const details = await page.locator('.timeline-details').innerText();
  assert.match(details, /sgemm/);
  assert.match(details, /Kind\s+gpu_kernel/);
  assert.match(details, /grid\s+\[/);
  assert.match(details, /Launched by: cudaLaunchKernel/);
  await page.screenshot({ path: join(SHOTS, 'timeline-kernel-details.png') });

  // Follow the flow to the launch, then back to the kernel.
  await page.click('.launched-by .link-button');
  await page.waitForSelector('.timeline-details .slice-name:has-text("cudaLaunchKernel")');
  const launch = await page.locator('.timeline-details').innerText();
  assert.match(launch, /Launched: .*sgemm/);
  assert.match(launch, /Stack \(outermost first\)/);
  await page.screenshot({ path: join(SHOTS, 'timeline-launch-flow.png') });
  await page.click('.launched .link-button');
  await page.waitForSelector('.timeline-details .slice-name:has-text("sgemm")');
  assert.equal(await selectedDrawn(page, selected), selected, 'back to the same kernel');

  // Deep zoom on a trace stamped in ns since 1970 (about 1.7e18, where an f64 steps by 256 ns):
  // F fits the kernel, W zooms to the 100 ns limit, and the worker keeps drawing and answering.
  await canvas(page).focus();
  let before = (await view(page)).draws;
  await page.keyboard.press('f');
  await drawnAfter(page, before);
  await holdKey(page, 'w', 1500);
  const deep = await view(page);
  assert.ok(deep.end - deep.start >= 99 && deep.end - deep.start < 1000, `zoomed to ${deep.end - deep.start} ns`);
  before = deep.draws;
  await holdKey(page, 'd', 200);
  assert.ok((await view(page)).draws > before, 'still drawing at 100 ns');
  await page.fill('#timeline-search', 'cudaLaunchKernel');
  await page.click('.timeline-search button[type=submit]');
  // The sgemm search above left "2 of N" on the page: wait for this search's own answer.
  await page.waitForFunction(() => /^1 of \d+/.test(document.querySelector('.timeline-found')?.textContent ?? ''));
  // Ctrl+F is the browser's: the view does not fit.
  before = (await view(page)).draws;
  const kept = await view(page);
  await canvas(page).focus();
  await page.keyboard.press('Control+f');
  await page.waitForTimeout(300);
  assert.equal((await view(page)).start, kept.start, 'Ctrl+F left the view alone');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a graph replay: the Overview counts its kernels, and a kernel and its hipGraphLaunch are one click apart', async (t) => {
  const opened = await openShared(t, HIP_GRAPH);
  if (!opened) return;
  const { page, context, errors } = opened;
  await page.fill('#timeline-search', 'hipGraphLaunch');
  await page.click('.timeline-search button[type=submit]');
  await page.waitForSelector('.timeline-details .slice-name:has-text("hipGraphLaunch")');
  const launch = await page.locator('.timeline-details').innerText();
  assert.match(launch, /CUDA\/HIP graph: graph launch 1 of 1 \(of 544 kernels\)/);
  assert.equal(await page.locator('.timeline-details .launched .link-button').count(), 544);
  await page.locator('.timeline-details .launched .link-button').nth(100).click();
  await page.waitForSelector('.timeline-details .launched-by');
  const kernel = await page.locator('.timeline-details').innerText();
  assert.match(kernel, /Kind\s+gpu_kernel/);
  assert.match(kernel, /Launched by: hipGraphLaunch/);
  assert.match(kernel, /CUDA\/HIP graph: launched by graph launch 1 of 1 \(of 544 kernels\)/);
  await page.screenshot({ path: join(SHOTS, 'timeline-graph-kernel.png') });
  await page.click('.launched-by .link-button');
  await page.waitForSelector('.timeline-details .slice-name:has-text("hipGraphLaunch")');
  await page.click('.tab:has-text("Overview")');
  assert.match(await page.locator('.facts').innerText(),
    /CUDA\/HIP graphs\s+544 kernels in 1 graph launch \(9\.66 ms of GPU time\)/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a multi-stream trace shows every stream and a range selected with Shift+drag', async (t) => {
  const opened = await openShared(t, MULTI_STREAM);
  if (!opened) return;
  const { page, context, errors } = opened;
  const box = await canvas(page).boundingBox();
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + 400, box.y + 120);
  await page.mouse.down();
  await page.mouse.move(box.x + 700, box.y + 140, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForSelector('.timeline-range li');
  const range = await page.locator('.timeline-range').innerText();
  assert.match(range, /Selected range: [\d.]+ (ms|µs|s)/);
  assert.match(range, /gpu_kernel: \d+ slice/);
  // Collapsing the CPU process (its header is the first strip under the 58-pixel header)
  // brings the GPU streams up.
  const tall = Number(await canvas(page).getAttribute('data-content-height'));
  const before = (await view(page)).draws;
  await page.mouse.click(box.x + 60, box.y + 58 + 10);
  await drawnAfter(page, before);
  const short = Number(await canvas(page).getAttribute('data-content-height'));
  assert.ok(short < tall / 2, `collapsed: ${tall} → ${short} px`);
  await page.screenshot({ path: join(SHOTS, 'timeline-multi-stream.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a finding moves the timeline to its flagged window, and its band leads back to it', async () => {
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.click('#sample'));
  await page.click('article.finding#finding-dataloader-bottleneck .show-on-timeline');
  await page.waitForSelector('canvas.timeline-canvas[data-finding="dataloader-bottleneck"]:not([data-draws="0"])');
  await page.waitForTimeout(200);
  const v = await view(page);
  // The sample's stalled steps are 12–15: the view shows one of their data-loading windows,
  // a few milliseconds of a 340 ms trace.
  assert.ok(v.end - v.start < 60e6, `the view spans ${(v.end - v.start) / 1e6} ms`);
  await page.screenshot({ path: join(SHOTS, 'timeline-finding.png') });
  // The band sits in the header's last strip (ruler 20 + steps 16 + heat 8, 14 high).
  const box = await canvas(page).boundingBox();
  await page.mouse.click(box.x + 200 + (box.width - 200) / 2, box.y + 20 + 16 + 8 + 7);
  await page.waitForSelector('.tab.active:has-text("Findings")');
  assert.equal(await page.locator('article.finding.selected').getAttribute('id'), 'finding-dataloader-bottleneck');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a burst of views is drawn as a few frames that end on the last view, never a stale one', async () => {
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.click('#sample'));
  await openTimeline(page);
  await page.waitForTimeout(300);
  const marks = () => canvas(page).evaluate((c) => ({
    view: Number(c.dataset.view),
    drawnView: Number(c.dataset.drawnView),
    draws: Number(c.dataset.draws),
    start: Number(c.dataset.start),
    end: Number(c.dataset.end),
  }));
  const whole = await marks();
  assert.equal(whole.drawnView, whole.view, 'the first view is drawn');
  // 40 Ctrl + wheel zooms in one task: 40 views posted before the worker's next frame.
  const burst = 40;
  const pointer = await canvas(page).evaluate((c, n) => {
    const box = c.getBoundingClientRect();
    let x;
    c.addEventListener('wheel', (e) => { x = Math.trunc(e.offsetX); }, { once: true });
    for (let i = 0; i < n; i += 1) {
      c.dispatchEvent(new WheelEvent('wheel', {
        deltaY: -100, ctrlKey: true, bubbles: true, cancelable: true,
        clientX: box.left + 200 + (box.width - 200) / 2, clientY: box.top + 100,
      }));
    }
    return { x, width: c.clientWidth };
  }, burst);
  // Settled: no frame for half a second.
  let last = -1;
  for (let now = await marks(); now.draws !== last; now = await marks()) {
    last = now.draws;
    await page.waitForTimeout(500);
  }
  const after = await marks();
  assert.equal(after.view, whole.view + burst, 'each zoom posted its view');
  assert.equal(after.drawnView, after.view, 'the last frame drew the last view');
  const frames = after.draws - whole.draws;
  assert.ok(frames >= 1 && frames <= burst / 4, `${burst} views drawn as ${frames} frames`);
  // The range drawn is the last view's: 40 zooms by e^-0.2 around the pointer.
  const span = after.end - after.start;
  const expected = (whole.end - whole.start) * Math.exp(-0.2 * burst);
  assert.ok(Math.abs(span - expected) <= 1 + 1e-6 * expected, `span ${span} ns, expected ${expected} ns`);
  // The time under the pointer stays put.
  const under = (v) => v.start + (pointer.x - 200) / (pointer.width - 200) * (v.end - v.start);
  assert.ok(Math.abs(under(after) - under(whole)) <= 2, `the pointer's time moved by ${under(after) - under(whole)} ns`);
  assert.deepEqual(errors, []);
  await context.close();
});
