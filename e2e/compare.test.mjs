// End-to-end: the Compare view (two traces as before and after) and the Run view (the ranks of
// one run) in headless Chromium, against what the CLI says of the same files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, launch, openPage, load, SHOTS, SHARED_TRACES, ROOT } from './support.mjs';

const TTAP = join(ROOT, 'target/debug/ttap');
const HTA = join(SHARED_TRACES, 'facebookresearch__HolisticTraceAnalysis');
const CONTROL = join(HTA, 'tests__data__trace_diff__control__control.json.gz');
const TREATED = join(HTA, 'tests__data__trace_diff__test__test.json.gz');

let site;
let browser;
let scratch;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  scratch = await mkdtemp(join(tmpdir(), 'ttap-e2e-compare-'));
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

/** The CLI's comparison of the same pair, or null (saying so) without target/debug/ttap. */
function cliVerdict(beforePath, afterPath) {
  if (!existsSync(TTAP)) {
    console.log('SKIPPED: target/debug/ttap is not built: the page is not checked against the CLI');
    return null;
  }
  const out = spawnSync(TTAP, ['compare', '--format', 'json', beforePath, afterPath], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout).verdict;
}

test("HTA's trace_diff pair compared in the page: the CLI's verdict, the tables, swapping", async (t) => {
  if (!existsSync(CONTROL) || !existsSync(TREATED)) {
    t.skip(`SKIPPED: ${HTA} is absent: the comparison of a real pair did not run`);
    return;
  }
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', [CONTROL, TREATED]), 300_000);
  await page.click('.tab:has-text("Compare")');
  const verdict = (await page.locator('.verdict').innerText()).replace(/^Verdict: /, '');
  assert.match(verdict, /^step time \+\d+\.\d % \(/);
  const expected = cliVerdict(CONTROL, TREATED);
  if (expected) assert.equal(verdict, expected);
  // The V100's SGEMMs are added, the A100's CUTLASS kernels removed.
  const added = await page.locator('section.table:has(h2:has-text("GPU work added")) td.name').allTextContents();
  const removed = await page.locator('section.table:has(h2:has-text("GPU work removed")) td.name').allTextContents();
  assert.ok(added.some((n) => n.startsWith('volta_sgemm')), added.join('\n'));
  assert.ok(removed.some((n) => n.startsWith('cutlass::Kernel')), removed.join('\n'));
  assert.equal(await page.locator('.compare .chart rect').count() > 0, true, 'the split chart');
  await page.screenshot({ path: join(SHOTS, 'compare-trace-diff.png') });
  await page.locator('.compare .chart').first().screenshot({ path: join(SHOTS, 'compare-trace-diff-split.png') });
  await page.locator('section.table').first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'compare-trace-diff-tables.png') });

  // Saved as Markdown: the CLI's Markdown of the same pair (20 names a table).
  const [saved] = await Promise.all([page.waitForEvent('download'), page.click('.save-compare')]);
  assert.equal(saved.suggestedFilename(), 'comparison.md');
  const markdown = await readFile(await saved.path(), 'utf8');
  assert.match(markdown, /^# Before\/after comparison\n/);
  if (existsSync(TTAP)) {
    const cli = spawnSync(TTAP, ['compare', '--format', 'md', '--top', '20', CONTROL, TREATED], { encoding: 'utf8' });
    assert.equal(markdown, cli.stdout);
  }

  await page.click('.compare .swap');
  const swapped = (await page.locator('.verdict').innerText()).replace(/^Verdict: /, '');
  assert.match(swapped, /^step time \u2212\d+\.\d % \(/);
  const reverse = cliVerdict(TREATED, CONTROL);
  if (reverse) assert.equal(swapped, reverse);
  // Rank 3 of 8 and rank 1 of 2: not the ranks of one run, so no Run view.
  assert.equal(await page.locator('.tab:has-text("Run")').count(), 0);
  assert.deepEqual(errors, []);
  await context.close();
});

test('an 8-rank run with a straggler in the Run view: rank, step and the part of the step', async () => {
  const dir = join(scratch, 'run8');
  const made = spawnSync(TTAP, ['synth', '--ranks', '8', '--steps', '8',
    '--inject', 'dataloader-bottleneck@5:0.8@rank5', '--out', dir], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const files = (await readdir(dir)).sort().map((f) => join(dir, f));
  assert.equal(files.length, 8);
  const { page, context, errors } = await openPage(browser, site.url);
  // Each rank's line of progress, as the page showed them during the load.
  await page.evaluate(() => {
    window.ttapRankStates = new Set();
    new MutationObserver(() => {
      for (const li of document.querySelectorAll('.load-file')) {
        window.ttapRankStates.add(`${li.querySelector('.name').textContent}: ${li.querySelector('.state').textContent}`);
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await load(page, async () => {
    await page.setInputFiles('#file-input', files);
    await page.screenshot({ path: join(SHOTS, 'run-loading.png') });
  }, 300_000);
  // One worker per core started at once, the other ranks queued; each one's line ends done.
  const states = await page.evaluate(() => [...window.ttapRankStates]);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  files.map((p) => p.split('/').pop()).forEach((f, i) => {
    const first = i < cores ? 'starting' : 'waiting for a worker';
    assert.ok(states.includes(`${f}: ${first}`), `${f}: ${first}?\n${states.join('\n')}`);
    assert.ok(states.includes(`${f}: done`), `${f}: done?\n${states.join('\n')}`);
  });
  await page.click('.tab:has-text("Run")');
  assert.equal(await page.locator('.run h2').innerText(), 'Run: 8 ranks');
  const findings = page.locator('.run-finding');
  assert.equal(await findings.count(), 1);
  const text = await findings.innerText();
  assert.match(text, /straggler rank 5 \(high\)/);
  assert.match(text, /in step 15,[\s\S]*idle: data loading/);
  assert.match(text, /Steps: 15$/m);
  // The step table marks rank 5 in step 15 as slow, and names it the critical rank.
  const row = page.locator('.run-steps tbody tr', { has: page.locator('td:first-child', { hasText: /^15$/ }) });
  assert.equal(await row.locator('td.slow').count(), 1);
  assert.equal(await row.locator('td').nth(6).getAttribute('class'), 'num slow');
  assert.equal(await row.locator('td').last().innerText(), '5');
  await page.screenshot({ path: join(SHOTS, 'run-straggler.png'), fullPage: true });
  const [saved] = await Promise.all([page.waitForEvent('download'), page.click('.save-run')]);
  const runMarkdown = await readFile(await saved.path(), 'utf8');
  assert.match(runMarkdown, /^# Run: 8 ranks\n\n- \*\*straggler\*\* \(high\): rank 5/);
  // The same run view as `ttap analyze DIR` (its Markdown starts with the run view's).
  const cli = spawnSync(TTAP, ['analyze', '--format', 'md', dir], { encoding: 'utf8', maxBuffer: 1 << 26 });
  assert.equal(cli.stdout.slice(0, runMarkdown.length), runMarkdown);
  // Each rank had its own worker, up to one per core at a time.
  const [started, peak] = (await page.locator('main').getAttribute('data-workers')).split('/').map(Number);
  assert.equal(started, 8);
  assert.equal(peak, Math.min(8, cores));
  console.log(`8 ranks: ${started} workers started, ${peak} at once (navigator.hardwareConcurrency ${cores})`);

  // Two ranks of the run picked as before and after (ranks 0 and 1 by default): the same work,
  // no significant change.
  await page.click('.tab:has-text("Compare")');
  assert.match(await page.locator('.verdict').innerText(), /^Verdict: no significant change in step time/);

  // Only rank 0's worker was kept, and answers about rank 0; rank 5's timeline is read again by
  // a new worker, which gets a canvas of its own; back to rank 0, another one.
  await page.evaluate(() => {
    window.ttapRereading = [];
    new MutationObserver(() => {
      const text = document.querySelector('.rereading')?.textContent.replace(/\(\d+ %\)/, '(…)');
      if (text && !window.ttapRereading.includes(text)) window.ttapRereading.push(text);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const rereading = () => page.evaluate(() => window.ttapRereading);
  const timelineOf = async (rank) => {
    await page.click(`.file-tab:has-text("rank-${rank}.pt.trace.json")`);
    await page.click('.tab:has-text("Timeline")');
    await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 60_000 });
    return page.locator('.timeline-status').innerText();
  };
  assert.match(await timelineOf(0), /^\d+ slices in \d+ rows/);
  assert.deepEqual(await rereading(), [], 'rank 0 is not read again');
  assert.match(await timelineOf(5), /^\d+ slices in \d+ rows/);
  assert.deepEqual(await rereading(), ['Reading rank-5.pt.trace.json again (…): after a load, the page keeps one trace in memory and reads another again when asked about it.']);
  assert.equal(await page.locator('.rereading').count(), 0, 'the notice goes once it is read');
  await page.screenshot({ path: join(SHOTS, 'run-rank5-timeline.png') });
  assert.match(await timelineOf(0), /^\d+ slices in \d+ rows/);
  assert.deepEqual(errors, []);
  await context.close();
});
