// Timeline speed: frame times while zooming and panning a large trace in headless Chromium (the
// built site, dist/), and the time from the loaded trace to the first frame. Prints figures;
// fails on nothing.
//
//   node e2e/timeline-bench.mjs [TRACE] [--dist DIR]…   (default trace: target/bench/bench-1900MiB.json,
//                                          ~5.3 M events, made by `ttap bench --size-mib 1900`)
//
// Each `--dist` (default: dist/) is a built site measured in turn in the same run, so an old
// build and a new one can be compared side by side (`cp -r dist /tmp/dist-old` before rebuilding).
//
// Needs the release CLI (cargo build --release) and the release site (trunk build --release).
// Each frame's draw time is measured in the worker (`Drawn.draw_ms`); the page appends it to
// `window.ttapFrames` with its arrival time, so the interval between frames is measured too
// (the page asks for a frame per animation frame while a key is held, at most one in flight).
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { serve, launch, openPage, load, DIST, ROOT, SHOTS } from './support.mjs';

const TTAP = join(ROOT, 'target/release/ttap');
const argv = process.argv.slice(2);
const dists = [];
const positional = [];
for (let i = 0; i < argv.length; i += 1) {
  if (argv[i] === '--dist') dists.push(resolve(argv[(i += 1)]));
  else positional.push(argv[i]);
}
if (!dists.length) dists.push(DIST);
const trace = positional[0] ?? join(ROOT, 'target/bench/bench-1900MiB.json');
if (!existsSync(trace)) {
  if (!existsSync(TTAP)) throw new Error(`${TTAP} is missing: run cargo build --release first`);
  console.log(`making ${trace} with ttap bench (a real trace repeated to 1900 MiB)…`);
  const made = spawnSync(TTAP, ['bench', '--size-mib', '1900', '--runs', '1'], { cwd: ROOT, stdio: 'inherit' });
  if (made.status !== 0) throw new Error('ttap bench failed');
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const stats = (xs) => `median ${quantile(xs, 0.5).toFixed(1)} ms, p95 ${quantile(xs, 0.95).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (${xs.length} frames)`;

async function measure(dist, shot) {
  const site = await serve(dist);
  const browser = await launch();
  const { page, errors } = await openPage(browser, site.url);
  const t0 = Date.now();
  await load(page, () => page.setInputFiles('#file-input', trace), 900_000);
  const loaded = (Date.now() - t0) / 1e3;
  if (await page.locator('.error-panel').count()) throw new Error(await page.locator('.error-panel').innerText());

  const t1 = Date.now();
  await page.click('.tab:has-text("Timeline")');
  await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 300_000 });
  const firstFrame = (Date.now() - t1) / 1e3;
  const status = await page.locator('.timeline-status').innerText();

  const canvas = page.locator('canvas.timeline-canvas');
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width * 0.55, box.y + box.height * 0.5);
  await canvas.focus();

  // The page's main-thread time (Chromium's own counters): what each frame costs the page,
  // apart from the worker's draw.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const taskSeconds = async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration').value;

  /** Holds `key` for `ms`; returns the frames drawn meanwhile and the page's task time. */
  async function hold(key, ms) {
    await page.evaluate(() => { window.ttapFrames = []; });
    const before = await taskSeconds();
    await page.keyboard.down(key);
    await page.waitForTimeout(ms);
    await page.keyboard.up(key);
    await page.waitForTimeout(300);
    const tasks = await taskSeconds() - before;
    return [await page.evaluate(() => window.ttapFrames), tasks];
  }

  // Panning at a key's rate moves the view by 1.2 spans a second: short holds keep most of the
  // trace in view while the whole trace is shown.
  const gestures = [
    ['whole trace, pan right', 'd', 400],
    ['whole trace, pan left', 'a', 400],
    ['zoom in', 'w', 2500],
    ['pan left', 'a', 1500],
    ['zoom out', 's', 2500],
    ['pan right', 'd', 1500],
  ];
  const draw = [];
  const interval = [];
  console.log(`site: ${dist}; trace: ${trace} (${(statSync(trace).size / 1e6).toFixed(0)} MB)`);
  console.log(`loaded (read, ingest, analysis) in ${loaded.toFixed(1)} s; ${status}`);
  console.log(`loaded trace to first frame (layout included): ${firstFrame.toFixed(2)} s`);
  let pageTasks = 0;
  for (const [label, key, ms] of gestures) {
    const [frames, tasks] = await hold(key, ms);
    pageTasks += tasks;
    const d = frames.map((f) => f[0]);
    const gaps = frames.slice(1).map((f, i) => f[1] - frames[i][1]);
    draw.push(...d);
    interval.push(...gaps);
    console.log(`${label}: draw ${stats(d)}; frame interval ${gaps.length ? stats(gaps) : '-'}`);
  }
  await page.screenshot({ path: join(SHOTS, shot) });
  console.log(`all gestures: draw ${stats(draw)}; page main thread ${(1e3 * pageTasks / draw.length).toFixed(1)} ms per frame`);
  console.log(`all gestures: frame interval ${stats(interval)}; ${(100 * interval.filter((x) => x <= 17.5).length / interval.length).toFixed(0)}% of frames within 60 fps`);
  if (errors.length) console.log(`page errors: ${errors.join('\n')}`);
  await browser.close();
  await site.close();
  return { draw, interval, perFrame: (1e3 * pageTasks) / draw.length };
}

const results = [];
for (const [k, dist] of dists.entries()) {
  results.push([dist, await measure(dist, k === 0 ? 'timeline-bench.png' : `timeline-bench-${k}.png`)]);
}
if (results.length > 1) {
  console.log('side by side (all gestures):');
  for (const [dist, { draw, interval, perFrame }] of results) {
    console.log(`  ${basename(dist)}: draw ${stats(draw)}; interval ${stats(interval)}; page ${perFrame.toFixed(1)} ms per frame`);
  }
}
