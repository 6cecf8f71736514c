// Timeline speed: frame times while zooming and panning a large trace in headless Chromium (the
// built site, dist/), and the time from the loaded trace to the first frame. Prints figures;
// fails on nothing.
//
//   node e2e/timeline-bench.mjs [TRACE] [--dist DIR]…   (default trace: target/bench/bench-1900MiB.json,
//                                          ~5.3 M events, made by `ttap-dev bench --size-mib 1900`)
//
// Each `--dist` (default: dist/) is a built site measured in turn in the same run, so an old
// build and a new one can be compared side by side (`cp -r dist /tmp/dist-old` before rebuilding).
//
// Needs the release CLI (cargo build --release) and the release site (trunk build --release).
// Each frame's draw time is measured in the worker (`Drawn.draw_ms`); the page appends it to
// `window.ttapFrames` with the time the reply reached it and, from builds that draw on the
// worker's animation frames, the time of the frame the image was committed in. Three intervals
// between frames are printed, each named:
// - `presented`: between the worker's animation frames that committed a new image (`frame_at`).
//   This is what the user sees: an image committed in an animation frame is shown on that
//   frame's display refresh; a frame the worker missed shows as a 33 ms interval. Builds that
//   drew outside animation frames have no such clock: `n/a`.
// - `display`: between the display compositor's frames that showed a new image of the canvas
//   while the key is held, for any build (Chromium's trace: each `Display::DrawAndSwap` after
//   the canvas's surface activated a frame, timed by the frame time of the BeginFrame it was
//   drawn for).
// - `reply` (the measure of earlier sessions): between the arrivals of `Drawn` replies at the
//   page, whose timing also holds the page's main-thread delays and the message's trip.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { serve, launch, openPage, load, DIST, ROOT, SHOTS } from './support.mjs';

const TTAP_DEV = join(ROOT, 'target/release/ttap-dev');
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
  if (!existsSync(TTAP_DEV)) throw new Error(`${TTAP_DEV} is missing: run cargo build --release first`);
  console.log(`making ${trace} with ttap-dev bench (a real trace repeated to 1900 MiB)…`);
  const made = spawnSync(TTAP_DEV, ['bench', '--size-mib', '1900', '--runs', '1'], { cwd: ROOT, stdio: 'inherit' });
  if (made.status !== 0) throw new Error('ttap-dev bench failed');
}

// Apart from the figures of all gestures: the page's main thread busy 10 ms a frame.
const busyGesture = ['zoom in, the page busy 10 ms a frame', 'w', 1500, 10];

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const gapsOf = (times) => times.slice(1).map((t, i) => t - times[i]);
// A display refresh at 60 Hz, ms; an interval over 1.5 refreshes missed at least one.
const REFRESH = 1000 / 60;
const named = (name, gaps) => (gaps.length
  ? `${name} ${stats(gaps)}, ${gaps.filter((x) => x > 1.5 * REFRESH).length} over 1.5 refreshes`
  : `${name} n/a`);
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

  /** The display compositor's frames between the page's marks `ttap-hold` and `ttap-release`
   * (µs of the trace's clock), from a trace recorded while `during` runs. */
  async function displayFrames(during) {
    const events = [];
    const collect = (d) => events.push(...d.value);
    cdp.on('Tracing.dataCollected', collect);
    const complete = new Promise((ok) => cdp.once('Tracing.tracingComplete', ok));
    await cdp.send('Tracing.start', { categories: 'viz,blink.user_timing', transferMode: 'ReportEvents' });
    await during();
    await cdp.send('Tracing.end');
    await complete;
    cdp.off('Tracing.dataCollected', collect);
    const mark = (name) => events.find((e) => e.name === name)?.ts;
    const [from, to] = [mark('ttap-hold'), mark('ttap-release')];
    // A swap counts when the canvas's surface activated a new image since the last one (the
    // page's own text changes are not frames of the timeline). The canvas's surface is the one
    // whose frame sink the renderer made (`FrameSinkId(client, id)` with id ≥ 2^31; the page's
    // is its routing id). A swap is timed by the refresh it was drawn for (its BeginFrame's
    // frame time): when the compositor's thread got to run within that refresh is not what
    // the screen shows.
    const canvasSink = /FrameSinkId\(\d+, (\d+)\)/;
    const frames = [];
    let refresh;
    let image = false;
    for (const e of events.filter((x) => x.ph === 'X').sort((x, y) => x.ts - y.ts)) {
      if (e.name === 'Surface::ActivateFrame') image ||= Number(e.args?.SurfaceId?.match(canvasSink)?.[1]) >= 2 ** 31;
      else if (e.name === 'DisplayScheduler::BeginFrame') refresh = e.args?.args?.frame_time_us;
      else if (e.name === 'Display::DrawAndSwap' && image && refresh !== undefined && e.ts >= from && e.ts <= to) {
        image = false;
        if (frames.at(-1) !== refresh / 1e3) frames.push(refresh / 1e3);
      }
    }
    return frames;
  }

  /** Holds `key` for `ms`, the page's main thread kept busy for `busy` ms of each animation
   * frame (another view, a garbage collection, a slower machine); returns the frames drawn
   * meanwhile, the display's frames and the page's task time. */
  async function hold(key, ms, busy = 0) {
    await page.evaluate(() => { window.ttapFrames = []; });
    const before = await taskSeconds();
    const display = await displayFrames(async () => {
      await page.evaluate((spinMs) => {
        window.ttapBusy = spinMs > 0;
        const spin = () => {
          if (!window.ttapBusy) return;
          for (const t = performance.now(); performance.now() - t < spinMs;);
          requestAnimationFrame(spin);
        };
        requestAnimationFrame(spin);
      }, busy);
      await page.keyboard.down(key);
      await page.evaluate(() => performance.mark('ttap-hold'));
      await page.waitForTimeout(ms);
      await page.evaluate(() => performance.mark('ttap-release'));
      await page.keyboard.up(key);
      await page.evaluate(() => { window.ttapBusy = false; });
      await page.waitForTimeout(300);
    });
    const tasks = await taskSeconds() - before;
    return [await page.evaluate(() => window.ttapFrames), display, tasks];
  }

  // Panning at a key's rate moves the view by 1.2 spans a second: short holds keep most of the
  // trace in view while the whole trace is shown; zoomed in, the pans go there and back, so
  // that every gesture draws the trace (earlier versions ended panned past its end).
  const gestures = [
    ['whole trace, pan right', 'd', 400],
    ['whole trace, pan left', 'a', 400],
    ['zoom in', 'w', 2500],
    ['pan left', 'a', 1500],
    ['pan right', 'd', 1500],
    ['zoom out', 's', 2500],
  ];
  const draw = [];
  const reply = [];
  const presented = [];
  const display = [];
  console.log(`site: ${dist}; trace: ${trace} (${(statSync(trace).size / 1e6).toFixed(0)} MB)`);
  console.log(`loaded (read, ingest, analysis) in ${loaded.toFixed(1)} s; ${status}`);
  console.log(`loaded trace to first frame (layout included): ${firstFrame.toFixed(2)} s`);
  let pageTasks = 0;
  /** Holds a gesture's key; prints and returns its figures. */
  async function gesture([label, key, ms, busy]) {
    const [frames, shown, tasks] = await hold(key, ms, busy);
    const d = frames.map((f) => f[0]);
    const replyGaps = gapsOf(frames.map((f) => f[1]));
    const presentedGaps = gapsOf([...new Set(frames.map((f) => f[2]).filter((t) => t > 0))]);
    const displayGaps = gapsOf(shown);
    const line = `interval: ${named('presented', presentedGaps)}; ${named('display', displayGaps)}; ${named('reply', replyGaps)}`;
    console.log(`${label}: draw ${stats(d)}; ${line}`);
    return { d, replyGaps, presentedGaps, displayGaps, tasks, line };
  }
  for (const g of gestures) {
    const { d, replyGaps, presentedGaps, displayGaps, tasks } = await gesture(g);
    pageTasks += tasks;
    draw.push(...d);
    reply.push(...replyGaps);
    presented.push(...presentedGaps);
    display.push(...displayGaps);
  }
  const busy = (await gesture(busyGesture)).line;
  await page.screenshot({ path: join(SHOTS, shot) });
  const within = (gaps) => gaps.length ? `${(100 * gaps.filter((x) => x <= 17.5).length / gaps.length).toFixed(0)}% within 17.5 ms` : 'n/a';
  console.log(`all gestures: draw ${stats(draw)}; page main thread ${(1e3 * pageTasks / draw.length).toFixed(1)} ms per frame`);
  for (const [name, gaps] of [['presented', presented], ['display', display], ['reply', reply]]) {
    console.log(`all gestures: ${named(name, gaps)} interval; ${within(gaps)}`);
  }
  if (errors.length) console.log(`page errors: ${errors.join('\n')}`);
  await browser.close();
  await site.close();
  return { draw, presented, display, reply, busy, perFrame: (1e3 * pageTasks) / draw.length };
}

const results = [];
for (const [k, dist] of dists.entries()) {
  results.push([dist, await measure(dist, k === 0 ? 'timeline-bench.png' : `timeline-bench-${k}.png`)]);
}
if (results.length > 1) {
  console.log('side by side (all gestures):');
  for (const [dist, { draw, presented, display, reply, busy, perFrame }] of results) {
    console.log(`  ${basename(dist)}: draw ${stats(draw)}; page ${perFrame.toFixed(1)} ms per frame`);
    console.log(`    interval: ${named('presented', presented)}; ${named('display', display)}; ${named('reply', reply)}`);
    console.log(`    ${busyGesture[0]}: ${busy}`);
  }
}
