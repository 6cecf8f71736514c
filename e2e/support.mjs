// Shared set-up for the end-to-end tests: a static server over the built site (dist/) and
// Debian's Chromium driven by playwright-core.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { mkdir, mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

export const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
// `TTAP_DIST`: another build of the site (a deliberately broken one, to see a test fail).
export const DIST = process.env.TTAP_DIST ?? join(ROOT, 'dist');
export const SHARED_TRACES = process.env.TTAP_SHARED_TRACES ?? join(ROOT, '../shared/traces');
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const LLM_URL = process.env.TTAP_LLM_URL;
export const LLM_KEY = process.env.TTAP_LLM_KEY;

const scratches = [];
process.on('exit', () => scratches.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A new folder under the system's temporary folder (named `prefix` and a random tail), removed
 * with all it holds when this test file's process exits, its tests passed or failed: traces the
 * tests write weigh hundreds of MB and must not pile up run after run. */
export async function scratchDir(prefix) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  scratches.push(dir);
  return dir;
}

/** Skips `t` saying why, or fails it where CI requires what is missing (`required` is set). */
function without(t, required, why) {
  if (process.env[required]) assert.fail(`${required} is set and ${why}`);
  t.skip(`SKIPPED: ${why}`);
  return true;
}

/** Whether `t` must stop because a shared trace (or folder) it reads is absent: it skips, saying
 * so, or fails where `TTAP_REQUIRE_SHARED_TRACES` is set (CI). */
export function lacksTrace(t, ...paths) {
  const absent = paths.find((p) => !existsSync(p));
  return absent !== undefined && without(t, 'TTAP_REQUIRE_SHARED_TRACES', `${absent} is absent (set TTAP_SHARED_TRACES)`);
}

/** Whether `t` must stop for want of an LLM server: it skips, saying so, or fails where
 * `TTAP_REQUIRE_LLM_SERVER` is set (CI). */
export function lacksServer(t) {
  return !(LLM_URL && LLM_KEY) && without(t, 'TTAP_REQUIRE_LLM_SERVER',
    'no LLM server (set TTAP_LLM_URL and TTAP_LLM_KEY: eval "$(scripts/llm-server.sh start)")');
}

export const REAL_LLM_URL = process.env.TTAP_REAL_LLM_URL;

/** Whether `t` must stop for want of the real model's server where the page looks for one
 * (http://127.0.0.1:8081, `scripts/llm-server.sh start-model`): it skips, saying so, or fails
 * where `TTAP_REQUIRE_LLM_SERVER` is set (CI). */
export function lacksRealModel(t) {
  return REAL_LLM_URL !== 'http://127.0.0.1:8081' && without(t, 'TTAP_REQUIRE_LLM_SERVER',
    `no real model server at http://127.0.0.1:8081 (TTAP_REAL_LLM_URL is ${REAL_LLM_URL ?? 'unset'}: eval "$(scripts/llm-server.sh start-model)")`);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
  '.gz': 'application/gzip',
  '.json': 'application/json',
};

/** Serves `root` on 127.0.0.1 under the sub-path `base` (the site must work under any sub-path),
 * with `headers` on every file (e.g. those of dist/_headers, as a host applies them). */
export async function serve(root = DIST, base = '/ttap/', headers = {}) {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (!path.startsWith(base)) {
      res.writeHead(404).end();
      return;
    }
    let file = normalize(join(root, path.slice(base.length)));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      res.writeHead(200, { ...headers, 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}${base}`;
  return { url, root, close: () => new Promise((ok) => server.close(ok)) };
}

/** The headers `dist/_headers` sets for every path (`/*`), as Netlify or Cloudflare Pages apply them. */
export async function hostHeaders() {
  const lines = (await readFile(join(DIST, '_headers'), 'utf8')).split('\n');
  assert.equal(lines[0], '/*');
  return Object.fromEntries(lines.slice(1).filter((l) => l.trim()).map((l) => {
    const at = l.indexOf(':');
    return [l.slice(0, at).trim(), l.slice(at + 1).trim()];
  }));
}

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/**
 * The built site served and a browser, for a test file: started before its tests, closed after
 * them. Its `site` and `browser` are there once the tests run.
 */
export function servedSite() {
  const served = {};
  before(async () => {
    await mkdir(SHOTS, { recursive: true });
    served.site = await serve();
    served.browser = await launch();
  });
  after(async () => {
    await served.browser?.close();
    await served.site?.close();
  });
  return served;
}

/** A page that records every request it makes, and fails the test on a page error. */
export async function openPage(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const requests = [];
  const errors = [];
  context.on('request', (r) => requests.push({ url: r.url(), method: r.method(), body: r.postData() }));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector('#sample');
  return { context, page, requests, errors };
}

/** Where screenshots go (the closing note names the ones looked at). */
export const SHOTS = join(ROOT, 'target', 'screenshots');

/** Every trace file under `dir`, recursively, with its path (sorted). */
export async function traceFiles(dir) {
  const { readdir } = await import('node:fs/promises');
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && !/\.(md|tsv)$/.test(entry.name)) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

/** Runs `action` (which starts a load) and waits until that load has ended. */
export async function load(page, action, timeout = 120_000) {
  const ended = Number(await page.locator('main').getAttribute('data-loads'));
  await action();
  await page.waitForSelector(`main[data-loads="${ended + 1}"]`, { timeout });
}

/** The phases the last file's worker measured (`ttap:worker:<phase>`, web/src/worker/mod.rs), in
 * the order they started: `{ phase, start, ms }`, `start` in ms since 1970. The file's worker
 * is the page's worker that has posted an analysis; none (`[]`) before that. */
export async function workerPhases(page) {
  for (const worker of page.workers()) {
    const measures = await worker
      .evaluate(() => performance.getEntriesByType('measure')
        .filter((m) => m.name.startsWith('ttap:worker:'))
        .map((m) => ({ phase: m.name.slice('ttap:worker:'.length), start: performance.timeOrigin + m.startTime, ms: m.duration })))
      .catch(() => []);
    if (measures.some((m) => m.phase === 'post')) return measures.sort((a, b) => a.start - b.start);
  }
  return [];
}

/** The finding ids the page shows for the selected file, or null when it shows an error. */
export async function shownFindings(page) {
  if (!(await page.locator('.analysis').count())) return null;
  const tab = page.locator('.tab', { hasText: 'Findings' });
  if (!(await tab.getAttribute('class')).includes('active')) await tab.click();
  return page.locator('article.finding').evaluateAll((els) => els.map((e) => e.id.replace(/^finding-/, '')));
}

/** The CLI the tests compare with (`cargo build`). */
export const TTAP = join(ROOT, 'target', 'debug', 'ttap');
/** The developers' CLI (`dev-cli/`: the generator, the window model's evaluation). */
export const TTAP_DEV = join(ROOT, 'target', 'debug', 'ttap-dev');

/** The CLI the page is checked against; built by `cargo test` before the end-to-end tests run. */
export function cli() {
  assert.ok(existsSync(TTAP), `${TTAP} is missing: build it (cargo build; scripts/test.sh does): the page is checked against it`);
  return TTAP;
}

/** The developers' CLI, built by `cargo test` with the user's. */
export function devCli() {
  assert.ok(existsSync(TTAP_DEV), `${TTAP_DEV} is missing: build it (cargo build; scripts/test.sh does)`);
  return TTAP_DEV;
}

/** The report `ttap analyze` writes for `trace`, with its fingerprint. */
export function analyze(trace) {
  const [one] = JSON.parse(execFileSync(TTAP, ['analyze', '--format', 'json', trace], { encoding: 'utf8', maxBuffer: 1 << 28 }));
  return one;
}

/** `pattern` labels for the windows of `analyzed` that `pick` accepts, as Export labels writes. */
export function labelsFor(analyzed, name, pick) {
  const seen = new Map();
  const labels = [];
  for (const w of analyzed.report.windows) {
    const index = seen.get(w.step) ?? 0;
    seen.set(w.step, index + 1);
    const pattern = pick(w);
    if (pattern) labels.push({ step: w.step, phase: w.phase, pattern, window: index, trace: name, fingerprint: analyzed.fingerprint });
  }
  return labels;
}
