// Browser speed: ingest + analysis of a large trace in headless Chromium (the built site, dist/),
// next to the native CLI on the same file, in the same run. Prints ratios; fails on nothing.
//
//   node e2e/bench.mjs [TRACE]     (default: target/bench/bench-1024MiB.json, made by `ttap-dev bench`)
//   node e2e/bench.mjs DIR         (the ranks of a run, e.g. `ttap-dev synth --ranks 8`: the page
//                                   analyzes each in its own worker; the CLI on all its threads)
//   WORKERS=1,2 RUNS=1 node e2e/bench.mjs TRACE   (the browser with 1, then 2 workers per file)
//   DISTS=/tmp/base-dist,dist node e2e/bench.mjs TRACE   (two builds of the site side by side)
//
// Runs alternate (the CLI, then each build with each worker count, `RUNS` times), so that the
// machine's load weighs on every figure alike. For one file, each run's phases as the file's
// worker measured them (`ttap:worker:<phase>` User Timing measures, web/src/worker/mod.rs) follow:
// reading (of which merging the helpers' ranges), assembling the model, the analysis, the
// page's views of it, posting them; then the page's share, from the post to the analysis shown.
//
// Needs the release CLI (cargo build --release) and the release site (trunk build --release).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { serve, launch, openPage, load, workerPhases, ROOT, DIST } from './support.mjs';

const TTAP = join(ROOT, 'target/release/ttap');
const TTAP_DEV = join(ROOT, 'target/release/ttap-dev');
const trace = process.argv[2] ?? join(ROOT, 'target/bench/bench-1024MiB.json');
const runs = Number(process.env.RUNS ?? 2);

if (!existsSync(TTAP)) throw new Error(`${TTAP} is missing: run cargo build --release first`);
if (!existsSync(trace)) {
  if (!existsSync(TTAP_DEV)) throw new Error(`${TTAP_DEV} is missing: run cargo build --release first`);
  console.log(`making ${trace} with ttap-dev bench (a real trace repeated to 1 GiB)…`);
  const made = spawnSync(TTAP_DEV, ['bench', '--runs', '1'], { cwd: ROOT, stdio: 'inherit' });
  if (made.status !== 0) throw new Error('ttap-dev bench failed');
}
const files = statSync(trace).isDirectory()
  ? readdirSync(trace).filter((f) => /\.json(\.gz)?$/.test(f)).sort().map((f) => join(trace, f))
  : [trace];
const size = files.reduce((sum, f) => sum + statSync(f).size, 0);
const mb = size / 1e6;

function best(times) {
  return Math.min(...times);
}

// Native: the whole CLI analysis (read, ingest, detect, report), one run.
function nativeRun() {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(TTAP, ['analyze', '--format', 'json', trace], { maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`ttap analyze failed: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

// Browser: from handing the file to the page to the analysis shown, each run in a fresh page
// (a fresh worker). `WORKERS=1,2` runs it once per worker count (`?workers=N`: the workers
// reading one file); by default the page chooses (navigator.hardwareConcurrency). `DISTS`:
// the builds of the site (default: TTAP_DIST, else dist/).
const dists = (process.env.DISTS ?? DIST).split(',').map((d) => resolve(d));
for (const dist of dists) if (!existsSync(join(dist, 'index.html'))) throw new Error(`${dist} holds no built site`);
const sites = await Promise.all(dists.map((dist) => serve(dist)));
const browser = await launch();
const counts = process.env.WORKERS ? process.env.WORKERS.split(',').map(Number) : [null];

// One more browser run for `result` (a build's site and a worker count), added to it.
async function browse(result) {
  const { site, count, inBrowser, reading, phases } = result;
  const url = count === null ? site.url : `${site.url}?workers=${count}`;
  const { page, context, errors } = await openPage(browser, url);
  // When the page first says "Analyzing" (the worker has read the whole file), if it ever does:
  // a fast load may go from reading to the result between two renders, so the end of the load
  // is taken from `main[data-loads]` (what `load` waits on), never from this label. Several
  // files have one line each, and no such label.
  if (files.length === 1) await page.evaluate(() => {
    window.ttapAnalyzingAt = null;
    new MutationObserver((_, observer) => {
      const label = document.querySelector('.loading-label');
      if (label?.textContent.startsWith('Analyzing')) {
        window.ttapAnalyzingAt = performance.now();
        observer.disconnect();
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const t0 = Date.now();
  const p0 = await page.evaluate(() => performance.now());
  await load(page, () => page.setInputFiles('#file-input', files), 900_000);
  const shown = Date.now();
  inBrowser.push((shown - t0) / 1e3);
  if (files.length === 1) phases.push(await phasesUntil(page, shown));
  const analyzingAt = await page.evaluate(() => window.ttapAnalyzingAt);
  reading.push(analyzingAt === null ? null : (analyzingAt - p0) / 1e3);
  if (await page.locator('.error-panel').count()) throw new Error(await page.locator('.error-panel').innerText());
  if (errors.length) throw new Error(errors.join('\n'));
  result.workers = await page.locator('main').getAttribute('data-workers');
  result.memory = `${(Number(await page.locator('main').getAttribute('data-memory')) / 2 ** 20).toFixed(0)} MiB`;
  await context.close();
}

// Seconds per phase the file's worker measured (`merge` summed over the ranges), and `page`:
// from the end of its post to `shown` (ms since 1970). `null` from builds without them.
async function phasesUntil(page, shown) {
  const measures = await workerPhases(page);
  const post = measures.find((m) => m.phase === 'post');
  if (!post) return null;
  const phases = { page: (shown - post.start - post.ms) / 1e3 };
  for (const { phase, ms } of measures) phases[phase] = (phases[phase] ?? 0) + ms / 1e3;
  return phases;
}

const native = [];
const results = [];
for (const count of counts) {
  for (const [d, site] of sites.entries()) {
    results.push({ dist: dists[d], site, count, inBrowser: [], reading: [], phases: [], memory: '', workers: '' });
  }
}
for (let i = 0; i < runs; i++) {
  native.push(nativeRun());
  for (const result of results) await browse(result);
}
await browser.close();
await Promise.all(sites.map((site) => site.close()));

const nativeBest = best(native);
console.log(`trace: ${trace} (${files.length} file${files.length > 1 ? 's' : ''}, ${mb.toFixed(1)} MB)`);
const threads = process.env.TTAP_THREADS ? `TTAP_THREADS=${process.env.TTAP_THREADS} threads` : `every core (${availableParallelism()})`;
console.log(`native CLI analyze, reading on ${threads}: ${native.map((t) => t.toFixed(2)).join(' s, ')} s → ${(mb / nativeBest).toFixed(1)} MB/s`);
const PHASES = ['read', 'merge', 'assemble', 'analysis', 'views', 'post', 'page'];
for (const { dist, count, inBrowser, reading, phases, memory, workers } of results) {
  const browserBest = best(inBrowser);
  const which = `${count === null ? 'page default' : `?workers=${count}`}${dists.length > 1 ? `, ${dist}` : ''}`;
  console.log(`browser (${which}): ${inBrowser.map((t) => t.toFixed(2)).join(' s, ')} s → ${(mb / browserBest).toFixed(1)} MB/s`);
  if (files.length === 1) console.log(`  of which reading and ingesting: ${reading.map((t) => (t === null ? 'not seen (the page never showed "Analyzing")' : `${t.toFixed(2)} s`)).join(', ')}`);
  for (const [run, p] of phases.entries()) {
    console.log(`  run ${run + 1}'s phases: ${p === null ? 'not measured by this build' : PHASES.map((k) => `${k} ${(p[k] ?? 0).toFixed(2)} s`).join(', ').replace(/, merge ([\d.]+ s)/, ' (of which merging $1)')}`);
  }
  console.log(`  browser / native throughput: ${(nativeBest / browserBest).toFixed(2)}`);
  const [started, peak] = workers.split('/');
  console.log(`  page's workers: ${started} started, ${peak} at once (a file's helpers not counted)`);
  console.log(`  the file worker's wasm memory at the end (the largest): ${memory} for ${mb.toFixed(0)} MB of trace`);
}
