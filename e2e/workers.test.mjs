// One trace read by several workers (`web/src/worker/ranges.rs`) gives the same analysis as one worker
// and as the CLI: the same events, steps, windows, findings and report.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFile, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { serve, launch, openPage, load, shownFindings, analyze, workerPhases, TTAP_DEV, scratchDir } from './support.mjs';

let site;
let browser;
let scratch;

before(async () => {
  scratch = await scratchDir('ttap-workers-');
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
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
  const phases = await workerPhases(page);
  const findings = await shownFindings(page);
  await page.click('.tab:has-text("Overview")');
  // All but the memory the analysis took, which differs.
  const facts = (await page.locator('.facts').innerText()).replace(/Memory used to analyze it\n.*/, '');
  const [json] = await Promise.all([page.waitForEvent('download'), page.click('.download-json')]);
  const report = JSON.parse(await readFile(await json.path(), 'utf8'));
  const labels = await page.evaluate(() => [...window.ttapLabels]);
  assert.deepEqual(errors, []);
  await context.close();
  return { findings, facts, report, labels, phases };
}

/** The worker measured its phases one after the other, each range's merge within the read
 * (`e2e/bench.mjs` reports them). */
function assertPhases(phases, workers) {
  const names = phases.map((m) => m.phase);
  const merges = phases.filter((m) => m.phase === 'merge');
  const steps = phases.filter((m) => m.phase !== 'merge');
  assert.deepEqual(steps.map((m) => m.phase), ['read', 'assemble', 'analysis', 'views', 'post'], `${workers} workers: ${names}`);
  for (const [a, b] of steps.slice(0, -1).map((m, i) => [m, steps[i + 1]])) {
    assert.ok(a.ms >= 0 && a.start + a.ms <= b.start + 1, `${a.phase} ends before ${b.phase} starts`);
  }
  const [read] = steps;
  for (const m of merges) assert.ok(m.start >= read.start && m.start + m.ms <= read.start + read.ms + 1, 'a merge within the read');
  if (workers === 1) assert.equal(merges.length, 0, 'one worker merges no ranges');
}

/** Checks that `trace` read by three workers gives what one worker and the CLI give. */
async function sameWithThreeWorkers(trace, steps) {
  const cli = analyze(trace);
  const one = await analyzeWith(trace, 1);
  const three = await analyzeWith(trace, 3);
  const name = basename(trace).replaceAll('.', '\\.');
  assert.ok(one.labels.every((l) => !l.includes('workers')), `one worker: ${one.labels}`);
  assert.ok(three.labels.some((l) => new RegExp(`^Reading ${name} with 3 workers$`).test(l)), `three: ${three.labels}`);
  assertPhases(one.phases, 1);
  assertPhases(three.phases, 3);

  assert.ok(three.findings.length > 0);
  assert.deepEqual(three.findings, one.findings);
  assert.deepEqual(three.findings, cli.report.findings.map((f) => f.id));
  assert.match(three.facts, new RegExp(`Steps\\n${steps} \\(${steps - 1} steady, 1 warm-up\\)[\\s\\S]*Events\\n[\\d,]+\\n`));
  assert.equal(three.facts, one.facts, 'events, steps and devices');
  assert.deepEqual(three.report, one.report, 'steps, windows and their scores, findings, split');
  // The CLI writes single-precision scores as doubles (0.9599999785423279 for 0.96).
  const rounded = ({ exporter: _, ...report }) =>
    JSON.parse(JSON.stringify(report, (_, v) => (typeof v === 'number' ? Number(v.toPrecision(6)) : v)));
  assert.deepEqual(rounded(three.report), rounded(cli.report), 'the report the CLI writes');
}

/** `ttap-dev synth` arguments: `steps` steps of ResNet-50 training with noise, the data loader
 * stalled in every other step from the fifth on. */
function stalled(steps) {
  const stalls = [];
  for (let s = 5; s < steps; s += 2) stalls.push('--inject', `dataloader-bottleneck@${s}:0.6`);
  return ['synth', '--steps', String(steps), '--noise', ...stalls];
}

test('a large trace read by three workers gives what one worker and the CLI give', async () => {
  // 63 MB: eight 8 MiB ranges, each starting between two events.
  const trace = join(scratch, 'ranges.pt.trace.json');
  const made = spawnSync(TTAP_DEV, [...stalled(100), '--out', trace]);
  assert.equal(made.status, 0, String(made.stderr));
  await sameWithThreeWorkers(trace, 100);
});

test('ranges that start inside an event are read again by the merging worker, with the same result', async () => {
  // Every complete event gets a list of small objects in its arguments (`,{` inside events,
  // most of the bytes): most range boundaries fall inside one, where a helper's guess that its
  // block starts between two events is wrong.
  const base = join(scratch, 'base.pt.trace.json');
  const made = spawnSync(TTAP_DEV, [...stalled(24), '--out', base]);
  assert.equal(made.status, 0, String(made.stderr));
  const doc = JSON.parse(await readFile(base, 'utf8'));
  const list = Array.from({ length: 80 }, (_, k) => ({ k }));
  for (const e of doc.traceEvents) if (e.ph === 'X') e.args = { ...(e.args ?? {}), list };
  const trace = join(scratch, 'nested.pt.trace.json');
  await writeFile(trace, JSON.stringify(doc));
  assert.ok((await stat(trace)).size > 32 * 2 ** 20, 'read with helpers');
  await sameWithThreeWorkers(trace, 24);
});

test('ranges that end deep inside a long string find their end with a second read, with the same result', async () => {
  // A helper reads its range and 64 KiB past it, where its block's end (the next event) is
  // found in every trace seen; here most of the bytes are strings of 1 MB in some events'
  // arguments, so most ranges end more than 64 KiB before the next event and read on to it.
  const base = join(scratch, 'long-base.pt.trace.json');
  const made = spawnSync(TTAP_DEV, [...stalled(24), '--out', base]);
  assert.equal(made.status, 0, String(made.stderr));
  const doc = JSON.parse(await readFile(base, 'utf8'));
  const complete = doc.traceEvents.filter((e) => e.ph === 'X');
  const every = Math.ceil(complete.length / 120);
  const note = 'x'.repeat(1_000_000);
  complete.forEach((e, i) => {
    if (i % every === 0) e.args = { ...(e.args ?? {}), note };
  });
  const trace = join(scratch, 'long.pt.trace.json');
  const text = JSON.stringify(doc);
  await writeFile(trace, text);
  // The ranges' nominal ends that fall more than 64 KiB before the next event: most of them,
  // and so some of those the helpers read, not the merging worker while they start.
  const ends = Array.from({ length: Math.floor(text.length / 2 ** 24) }, (_, k) => (k + 1) * 2 ** 24);
  const far = ends.filter((to) => text.indexOf(',{', to) - to > 64 * 1024);
  assert.ok(ends.length >= 6 && far.length >= ends.length - 1, `${far.length} of ${ends.length} ends far from an event`);
  await sameWithThreeWorkers(trace, 24);
});

test('a file changed after it was chosen: the page says which bytes could not be read and what to do', async () => {
  // Chromium refuses to read a chosen file that changed on disk since: both readers (one worker
  // streaming the file, helpers reading ranges) must say so, where, and that it must be chosen
  // again, and the page must stay usable.
  const base = join(scratch, 'chosen-base.pt.trace.json');
  const made = spawnSync(TTAP_DEV, [...stalled(100), '--out', base]);
  assert.equal(made.status, 0, String(made.stderr));
  for (const workers of [1, 3]) {
    const trace = join(scratch, `chosen-${workers}.pt.trace.json`);
    await copyFile(base, trace);
    assert.ok((await stat(trace)).size > 32 * 2 ** 20, 'read with helpers');
    const { page, context, errors } = await openPage(browser, `${site.url}?workers=${workers}`);
    await page.evaluate(() => {
      const held = Object.assign(document.createElement('input'), { type: 'file', id: 'held', hidden: true });
      document.body.append(held);
    });
    await page.setInputFiles('#held', trace);
    // The file's size as chosen (Chromium notes it when first asked), then the file cut short.
    const chosen = await page.evaluate(() => document.querySelector('#held').files[0].size);
    assert.equal(chosen, (await stat(trace)).size);
    await truncate(trace, 1_000_000);
    await load(page, () => page.evaluate(() => {
      const input = document.querySelector('#file-input');
      input.files = document.querySelector('#held').files;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    }));
    const panel = await page.locator('.error-panel').innerText();
    assert.match(panel, new RegExp(`could not read bytes 0\\.\\.${workers === 1 ? chosen : 512}: [^\\n]*[^.]\\. The file may have been moved, changed or deleted since it was chosen: choose it again\\.`), `${workers} workers: ${panel}`);
    assert.deepEqual(errors, []);
    // The page still reads a file chosen afresh.
    await load(page, () => page.setInputFiles('#file-input', base));
    assert.equal(await page.locator('.error-panel').count(), 0, 'no error after choosing a good file');
    assert.ok((await shownFindings(page)).length > 0);
    await context.close();
  }
});
