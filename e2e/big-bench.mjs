// A large trace in a tab: each TRACE (plain or .gz) loaded in a fresh page of headless Chromium
// (the built site, dist/); prints the time to the early look (a large plain trace's first
// steps) and to the whole analysis, the worker's peak wasm memory
// and its ratio to the trace's uncompressed size, or the page's message when the trace is past
// the worker's memory limit. Not a test (too slow for CI): `e2e/app.test.mjs` checks the limit's
// message on a small trace with the limit lowered.
//
// The merging worker's wasm memory is not the whole tab's: a large plain trace's worker has
// helpers (one per core), and the page and its JS heap weigh too. So the peak resident memory
// of Chromium's renderer processes (page and workers, summed; polled every 100 ms from /proc,
// Linux only) is printed beside it.
//
//   [WORKERS=N] [SHOTS=DIR] [DISTS=A,B] node e2e/big-bench.mjs TRACE... [--json-bytes N]
//     N: uncompressed size, for a .gz; WORKERS: the page's `?workers=N` (default: its own);
//     SHOTS: where screenshots of the early look and of the whole analysis go; DISTS: builds
//     of the site, each trace loaded in each in turn (the build before beside this one, in
//     the same run; default: TTAP_DIST, else dist/)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { DIST, serve, launch, openPage, load } from './support.mjs';

const args = process.argv.slice(2);
const at = args.indexOf('--json-bytes');
const jsonBytes = at >= 0 ? Number(args.splice(at, 2)[1]) : null;
if (!args.length) throw new Error('usage: node e2e/big-bench.mjs TRACE... [--json-bytes N]');

const gib = (n) => `${(n / 2 ** 30).toFixed(2)} GiB`;
const workers = process.env.WORKERS ? `?workers=${Number(process.env.WORKERS)}` : '';

// Chromium's renderer processes now (page, workers, service worker; 0 without /proc), bytes:
// `rss`, their summed resident memory, counts the browser's binary once per process (file
// pages every process shares); `own`, their anonymous and shared-memory pages, is what the
// tab itself holds (Chromium's task manager calls it the memory footprint).
function renderers() {
  const sum = { rss: 0, own: 0 };
  let pids = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return sum;
  }
  const kib = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('--type=renderer')) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'latin1');
      sum.rss += kib(status, 'VmRSS');
      sum.own += kib(status, 'RssAnon') + kib(status, 'RssShmem');
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sum;
}
const dists = (process.env.DISTS ?? DIST).split(',').map((d) => resolve(d));
for (const dist of dists) if (!existsSync(join(dist, 'index.html'))) throw new Error(`${dist} holds no built site`);
const sites = await Promise.all(dists.map((dist) => serve(dist)));
const browser = await launch();
for (const trace of args) for (const site of sites) {
  const size = statSync(trace).size;
  const json = trace.endsWith('.gz') ? jsonBytes : size;
  const { page, context, errors } = await openPage(browser, site.url + workers);
  let crashed = false;
  page.on('crash', () => { crashed = true; });
  // The worker's memory while it reads, as the progress line says it (the page's own text).
  await page.evaluate(() => {
    window.ttapReadMemory = '';
    new MutationObserver(() => {
      const detail = document.querySelector('.loading-detail')?.textContent ?? '';
      const label = document.querySelector('.loading-label')?.textContent ?? '';
      if (label.startsWith('Reading')) window.ttapReadMemory = detail;
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const idle = renderers();
  const t0 = Date.now();
  const tab = { ...idle };
  const poll = setInterval(() => {
    const now = renderers();
    tab.rss = Math.max(tab.rss, now.rss);
    tab.own = Math.max(tab.own, now.own);
  }, 100);
  // The early look (a large plain trace's first steps, `worker/early.rs`): when it shows.
  let early = null;
  const shot = (when) => process.env.SHOTS
    && page.screenshot({ path: `${process.env.SHOTS}/big-${basename(trace)}${sites.length > 1 ? `-${sites.indexOf(site)}` : ''}-${when}.png` });
  page.waitForSelector('#early-findings', { timeout: 3_600_000 })
    .then(() => { early = (Date.now() - t0) / 1e3; return shot('early'); })
    .catch(() => {});
  await load(page, () => page.setInputFiles('#file-input', trace), 3_600_000);
  const seconds = (Date.now() - t0) / 1e3;
  await shot('whole');
  clearInterval(poll);
  const memory = Number(await page.locator('main').getAttribute('data-memory'));
  const findings = await page.locator('article.finding').count();
  const refused = await page.locator('.error-panel .error-message').allInnerTexts();
  console.log(`${trace}: ${(size / 1e6).toFixed(0)} MB${json && json !== size ? ` (${(json / 1e6).toFixed(0)} MB of JSON)` : ''}, build ${site.root}`);
  if (refused.length) console.log(`  refused after ${seconds.toFixed(1)} s: ${refused.join(' | ')}`);
  else console.log(`  whole analysis shown after ${seconds.toFixed(1)} s (${findings} findings)`);
  const earlyLook = await page.locator('main').getAttribute('data-early');
  console.log(early === null
    ? '  no early look'
    : `  early look shown after ${early.toFixed(1)} s: ${earlyLook}`);
  console.log(`  worker wasm memory, peak: ${gib(memory)}${json ? ` = ${(memory / json).toFixed(3)} × the trace's JSON` : ''}`);
  const share = (n) => (json ? ` = ${(n / json).toFixed(3)} × the trace's JSON` : '');
  console.log(`  tab's own memory (renderers' anonymous and shared pages), peak: ${gib(tab.own)}${share(tab.own)}; idle before the trace: ${gib(idle.own)}`);
  console.log(`  renderers' resident memory (the binary counted per process), peak: ${gib(tab.rss)}${share(tab.rss)}; idle: ${gib(idle.rss)}`);
  console.log(`  last progress line while reading: ${await page.evaluate(() => window.ttapReadMemory)}`);
  if (crashed) console.log('  THE TAB CRASHED');
  if (errors.length) console.log(`  page errors: ${errors.join('\n')}`);
  await context.close();
}
await browser.close();
await Promise.all(sites.map((site) => site.close()));
