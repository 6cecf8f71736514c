// One trace read by several workers (`web/src/ranges.rs`) gives the same analysis as one worker
// and as the CLI: the same events, steps, windows, findings and report.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, launch, openPage, load, shownFindings, analyze, TTAP } from './support.mjs';

let site;
let browser;
let scratch;

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ttap-workers-'));
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
  await rm(scratch, { recursive: true, force: true });
});

/** Loads `trace` in a page forced to `workers` workers per file; returns what the page showed,
 * the exported report, and the loading labels seen. */
async function analyzeWith(trace, workers) {
  const { page, context, errors } = await openPage(browser, `${site.url}?workers=${workers}`);
  await page.evaluate(() => {
    window.ttapLabels = new Set();
    new MutationObserver(() => {
      const label = document.querySelector('.loading-label');
      if (label) window.ttapLabels.add(label.textContent);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await load(page, () => page.setInputFiles('#file-input', trace), 300_000);
  assert.equal(await page.locator('.error-panel').count(), 0, 'no error');
  const findings = await shownFindings(page);
  await page.click('.tab:has-text("Overview")');
  // All but the memory the analysis took, which differs.
  const facts = (await page.locator('.facts').innerText()).replace(/Memory used to analyze it\n.*/, '');
  const [json] = await Promise.all([page.waitForEvent('download'), page.click('.download-json')]);
  const report = JSON.parse(await readFile(await json.path(), 'utf8'));
  const labels = await page.evaluate(() => [...window.ttapLabels]);
  assert.deepEqual(errors, []);
  await context.close();
  return { findings, facts, report, labels };
}

test('a large trace read by three workers gives what one worker and the CLI give', async () => {
  // 63 MB of generated ResNet-50 training, stalled every other step, with noise: four 16 MiB
  // ranges.
  const trace = join(scratch, 'ranges.pt.trace.json');
  const stalls = Array.from({ length: 46 }, (_, i) => ['--inject', `dataloader-bottleneck@${5 + 2 * i}:0.6`]);
  const made = spawnSync(TTAP, ['synth', '--steps', '100', '--noise', ...stalls.flat(), '--out', trace]);
  assert.equal(made.status, 0, String(made.stderr));
  const cli = analyze(trace);

  const one = await analyzeWith(trace, 1);
  const three = await analyzeWith(trace, 3);
  assert.ok(one.labels.every((l) => !l.includes('workers')), `one worker: ${one.labels}`);
  assert.ok(three.labels.some((l) => /^Reading ranges\.pt\.trace\.json with 3 workers$/.test(l)), `three: ${three.labels}`);

  assert.ok(three.findings.length > 0);
  assert.deepEqual(three.findings, one.findings);
  assert.deepEqual(three.findings, cli.report.findings.map((f) => f.id));
  assert.match(three.facts, /Steps\n100 \(99 steady, 1 warm-up\)[\s\S]*Events\n[\d,]+\n/);
  assert.equal(three.facts, one.facts, 'events, steps and devices');
  assert.deepEqual(three.report, one.report, 'steps, windows and their scores, findings, split');
  // The CLI writes single-precision scores as doubles (0.9599999785423279 for 0.96).
  const rounded = ({ exporter: _, ...report }) =>
    JSON.parse(JSON.stringify(report, (_, v) => (typeof v === 'number' ? Number(v.toPrecision(6)) : v)));
  assert.deepEqual(rounded(three.report), rounded(cli.report), 'the report the CLI writes');
});
