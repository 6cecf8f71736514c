// Message cost: the page's main-thread time per page↔worker message (reading and decoding a
// message from the worker; encoding and posting one to it), for the report of a large trace and
// for the timeline's frames, in headless Chromium (the built site, dist/). Prints figures; fails
// on nothing.
//
//   node e2e/protocol-bench.mjs TRACE [FRAMES]   (e.g. a trace made by `ttap-dev synth --steps 100`)
//
// The page records each message's cost as a User Timing measure (`web/src/page/cost.rs`); this
// script collects them with a PerformanceObserver installed before the page starts.
import { statSync } from 'node:fs';
import { serve, launch, openPage, load } from './support.mjs';

const trace = process.argv[2];
if (!trace) throw new Error('usage: node e2e/protocol-bench.mjs TRACE [FRAMES]');
const frames = Number(process.argv[3] ?? 60);

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

const site = await serve();
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
await context.addInitScript(() => {
  window.ttapCosts = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.name.startsWith('ttap:')) window.ttapCosts.push([e.name, e.duration]);
    }
  }).observe({ entryTypes: ['measure'] });
});
const { page, errors } = await openPage({ newContext: async () => context }, site.url);
await load(page, () => page.setInputFiles('#file-input', trace), 900_000);
if (await page.locator('.error-panel').count()) throw new Error(await page.locator('.error-panel').innerText());

await page.click('.tab:has-text("Timeline")');
await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 300_000 });
const canvas = page.locator('canvas.timeline-canvas');
const box = await canvas.boundingBox();
await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
// One frame per zoom step: each wheel event posts a view, and the next waits for its frame.
for (let i = 0; i < frames; i++) {
  const drawn = Number(await canvas.getAttribute('data-draws'));
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, i % 2 ? 120 : -120);
  await page.keyboard.up('Control');
  await page.waitForFunction(
    (n) => Number(document.querySelector('canvas.timeline-canvas').dataset.draws) > n, drawn);
}
await page.waitForTimeout(300);
const costs = await page.evaluate(() => window.ttapCosts);
if (errors.length) throw new Error(errors.join('\n'));
await browser.close();
await site.close();

console.log(`trace: ${trace} (${(statSync(trace).size / 1e6).toFixed(1)} MB)`);
const byName = new Map();
for (const [name, ms] of costs) byName.set(name, [...(byName.get(name) ?? []), ms]);
for (const [name, xs] of [...byName].sort()) {
  console.log(`${name.padEnd(34)} n=${String(xs.length).padStart(4)}  median ${quantile(xs, 0.5).toFixed(3)} ms  p90 ${quantile(xs, 0.9).toFixed(3)} ms  max ${Math.max(...xs).toFixed(3)} ms`);
}
