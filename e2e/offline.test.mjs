// End-to-end: after one visit the site works with no network (www/sw.js, scripts/offline.mjs).
// Visit once, wait for the service worker and its cache, take the browser offline, reload: the
// page opens, the sample and a dropped trace are analyzed, and every request is answered by the
// service worker (none fails, none reaches the network). The cache holds exactly the files the
// build listed, never the trace. At the site's root and under a deep sub-path with the host
// headers of dist/_headers (its CSP included: no CSP message).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFile, copyFile, cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serve, hostHeaders, launch, load, shownFindings, DIST, ROOT, SHOTS, scratchDir } from './support.mjs';

// A trace of the user's (the sample under another name, so it cannot be confused with it).
const DROPPED = 'private-run-rank0.pt.trace.json.gz';

let browser;
let dropped;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  dropped = join(await scratchDir('ttap-offline-'), DROPPED);
  await copyFile(join(ROOT, 'www/samples/resnet50-a100-dataloader.pt.trace.json.gz'), dropped);
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

/** The files the build listed for offline use (written into dist/sw.js by scripts/offline.mjs). */
async function listed() {
  const worker = await readFile(join(DIST, 'sw.js'), 'utf8');
  const json = worker.match(/^const OFFLINE = (\{.*\});$/m);
  assert.ok(json, 'dist/sw.js holds the file list: was the site built by Trunk (scripts/offline.mjs)?');
  return JSON.parse(json[1]).files;
}

/** Every cache of the page's origin: its name and the URLs it holds. */
function cacheContents(page) {
  return page.evaluate(async () => Promise.all((await caches.keys()).map(async (name) => ({
    name,
    urls: (await (await caches.open(name)).keys()).map((r) => r.url).sort(),
  }))));
}

for (const [where, base, headers] of [['at the root', '/', false], ['under a sub-path', '/some/sub/path/', true]]) {
  test(`offline after one visit, ${where}: the page, the sample and a dropped trace; nothing sent, the trace not cached`, async () => {
    const started = Date.now();
    const site = await serve(DIST, base, headers ? await hostHeaders() : {});
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const logs = [];
    const errors = [];
    page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await page.goto(site.url);
      await page.waitForSelector('#sample');
      const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
      assert.equal(scope, site.url, 'the service worker covers the folder the site is served from');

      const files = await listed();
      const paths = files.map((f) => f.path);
      for (const needed of ['index.html', 'app.js', 'app_bg.wasm', 'worker_loader.js', 'worker.js',
        'worker_bg.wasm', 'style.css', 'offline.js', 'models/base-set.bin.gz',
        'samples/resnet50-a100-dataloader.pt.trace.json.gz']) {
        assert.ok(paths.includes(needed), `${needed} is listed for offline use: ${paths}`);
      }
      const expected = paths.map((p) => new URL(p, site.url).href).sort();
      const [cache, ...others] = await cacheContents(page);
      assert.deepEqual(others, [], 'one cache');
      assert.deepEqual(cache.urls, expected, 'the cache holds the listed files');
      // What is not a GET of a listed file goes to the network untouched: a POST (as to an LLM
      // endpoint), a query, a path not listed.
      for (const [path, method] of [['app.js', 'POST'], ['app.js?v=2', 'GET'], ['not-listed.json', 'GET']]) {
        const url = new URL(path, site.url).href;
        const [response] = await Promise.all([page.waitForResponse(url),
          // The body is read to its end, so that no probe is still downloading when the
          // browser goes offline (its abort would count as a request failed offline).
          page.evaluate(([u, m]) => fetch(u, { method: m }).then(async (r) => { await r.text(); return r.status; }), [url, method])]);
        assert.equal(response.fromServiceWorker(), false, `${method} ${url} went to the network`);
      }

      await context.setOffline(true);
      const requests = [];
      const failed = [];
      context.on('request', (r) => requests.push(r));
      context.on('requestfailed', (r) => failed.push(`${r.url()}: ${r.failure()?.errorText}`));
      await page.reload();
      await page.waitForSelector('#sample');
      assert.match(await page.locator('.offline-note').innerText(), /Works offline after the first visit; traces never leave this browser/);
      await page.screenshot({ path: join(SHOTS, headers ? 'offline-sub-path.png' : 'offline.png') });

      await load(page, () => page.click('#sample'));
      assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck']);
      await load(page, () => page.setInputFiles('#file-input', dropped));
      assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck']);
      await page.screenshot({ path: join(SHOTS, headers ? 'offline-sub-path-findings.png' : 'offline-findings.png'), fullPage: true });

      assert.deepEqual(failed, [], 'no request failed offline');
      const answers = await Promise.all(requests.map(async (r) => ({ url: r.url(), worker: (await r.response())?.fromServiceWorker() })));
      assert.ok(answers.some((a) => a.url.endsWith('worker_bg.wasm')), 'the workers started offline');
      assert.deepEqual(answers.filter((a) => !a.worker), [], 'every request was answered by the service worker');
      const after = await cacheContents(page);
      assert.deepEqual(after, [cache], 'the cache is as it was: the traces were not stored');
      assert.ok(after.every((c) => c.urls.every((u) => !u.includes('private-run'))));
      assert.deepEqual(logs.filter((l) => /content.security.policy|CSP/i.test(l)), [], 'no CSP message');
      assert.deepEqual(errors, []);
      console.log(`offline ${where}: ${files.length} files, ${files.reduce((s, f) => s + f.bytes, 0)} bytes cached; ${((Date.now() - started) / 1000).toFixed(1)} s`);
    } finally {
      await context.close();
      await site.close();
    }
  });
}

test('a new build is taken on the next load once its service worker has filled its cache', async () => {
  const dir = await scratchDir('ttap-offline-site-');
  await cp(DIST, dir, { recursive: true });
  const site = await serve(dir, '/');
  const context = await browser.newContext();
  const page = await context.newPage();
  const cacheNames = () => page.evaluate(() => caches.keys());
  try {
    await page.goto(site.url);
    await page.evaluate(() => navigator.serviceWorker.ready);
    const [first] = await cacheNames();

    // Build 2: one file changed, its list and version written again as Trunk's hook would.
    await appendFile(join(dir, 'offline.js'), '// build 2\n');
    const worker = join(dir, 'sw.js');
    await writeFile(worker, (await readFile(worker, 'utf8'))
      .replace(/^const OFFLINE = .*;$/m, 'const OFFLINE = /* offline.mjs: the file list */ null;'));
    execFileSync(process.execPath, [join(ROOT, 'scripts/offline.mjs'), dir]);
    const version = (await readFile(worker, 'utf8')).match(/"version":"([0-9a-f]+)"/)[1];

    // This load finds the new worker; it installs beside the running one and waits.
    await page.reload();
    const waiting = () => page.evaluate(async () => Boolean((await navigator.serviceWorker.getRegistration())?.waiting));
    for (const until = Date.now() + 30_000; !(await waiting());) {
      assert.ok(Date.now() < until, 'the new build\'s service worker installed within 30 s');
      await page.waitForTimeout(100);
    }
    assert.equal((await cacheNames()).length, 2, 'both builds cached while the new one waits');
    assert.ok(!(await page.evaluate(() => fetch('offline.js').then((r) => r.text()))).includes('build 2'), 'this page still has build 1');

    // The next load is build 2's, and build 1's cache is gone.
    await page.reload();
    // Under the whole suite's load on 2 cores, this load once took longer than the default 30 s.
    await page.waitForSelector('#sample', { timeout: 90_000 });
    assert.ok((await page.evaluate(() => fetch('offline.js').then((r) => r.text()))).includes('build 2'), 'this load has build 2');
    const names = await cacheNames();
    assert.equal(names.length, 1, `one cache: ${names}`);
    assert.ok(names[0].endsWith(` ${version}`) && names[0] !== first, names[0]);
  } finally {
    await context.close();
    await site.close();
  }
});
