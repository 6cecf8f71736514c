// End-to-end: the Compare view (two traces as before and after) and the Run view (the ranks of
// one run) in headless Chromium, against what the CLI says of the same files; both shared as
// links (made in the page, opened in a fresh page with no trace: the same verdict, tables and
// straggler), forged links refused or shown as data; before and after aligned by step.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import { serve, launch, openPage, load, lacksTrace, cli, SHOTS, SHARED_TRACES, ROOT, scratchDir } from './support.mjs';

const TTAP = join(ROOT, 'target/debug/ttap');
const TTAP_DEV = join(ROOT, 'target/debug/ttap-dev');
const HTA = join(SHARED_TRACES, 'facebookresearch__HolisticTraceAnalysis');
const CONTROL = join(HTA, 'tests__data__trace_diff__control__control.json.gz');
const TREATED = join(HTA, 'tests__data__trace_diff__test__test.json.gz');

let site;
let browser;
let scratch;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  scratch = await scratchDir('ttap-e2e-compare-');
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

/** The CLI's comparison of the same pair. */
function cliVerdict(beforePath, afterPath) {
  const out = spawnSync(cli(), ['compare', '--format', 'json', beforePath, afterPath], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout).verdict;
}

/** The 8 rank traces of a generated run with a straggler on rank 5 in step 5, in `scratch/name`. */
async function synthRun(name) {
  const dir = join(scratch, name);
  const made = spawnSync(TTAP_DEV, ['synth', '--ranks', '8', '--steps', '8',
    '--inject', 'dataloader-bottleneck@5:0.8@rank5', '--out', dir], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  return (await readdir(dir)).sort().map((f) => join(dir, f));
}

test("HTA's trace_diff pair compared in the page: the CLI's verdict, the tables, swapping", async (t) => {
  if (lacksTrace(t, CONTROL, TREATED)) return;
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', [CONTROL, TREATED]), 300_000);
  await page.click('.tab:has-text("Compare")');
  const verdict = (await page.locator('.verdict').innerText()).replace(/^Verdict: /, '');
  assert.match(verdict, /^step time \+\d+\.\d % \(/);
  const expected = cliVerdict(CONTROL, TREATED);
  assert.equal(verdict, expected);
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
  const cliMarkdown = spawnSync(cli(), ['compare', '--format', 'md', '--top', '20', CONTROL, TREATED], { encoding: 'utf8' });
  assert.equal(markdown, cliMarkdown.stdout);

  await page.click('.compare .swap');
  const swapped = (await page.locator('.verdict').innerText()).replace(/^Verdict: /, '');
  assert.match(swapped, /^step time \u2212\d+\.\d % \(/);
  const reverse = cliVerdict(TREATED, CONTROL);
  assert.equal(swapped, reverse);
  // Rank 3 of 8 and rank 1 of 2: not the ranks of one run, so no Run view.
  assert.equal(await page.locator('.tab:has-text("Run")').count(), 0);
  assert.deepEqual(errors, []);
  await context.close();
});

test('an 8-rank run with a straggler in the Run view: rank, step and the part of the step', async () => {
  const files = await synthRun('run8');
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
  const cli = spawnSync(TTAP, ['analyze', '--format', 'md', join(scratch, 'run8')], { encoding: 'utf8', maxBuffer: 1 << 26 });
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

/** A generated before (a data-loading stall in steps 2 to 7) and after (none), made by the CLI. */
function generatedPair() {
  const out = (name, extra) => {
    const file = join(scratch, name);
    const made = spawnSync(TTAP_DEV, ['synth', '--steps', '8', ...extra, '--out', file], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    return file;
  };
  return [
    out('before.pt.trace.json', [2, 3, 4, 5, 6, 7].flatMap((s) => ['--inject', `dataloader-bottleneck@${s}:0.8`])),
    out('after.pt.trace.json', ['--seed', '2']),
  ];
}

/** The link the page's Share button of the shown view makes. */
async function shareLink(page) {
  await page.click('.share-view');
  const link = await page.inputValue('#view-share-link');
  assert.ok(link.startsWith(`${site.url}#ttap`), link);
  return link;
}

/** Each aligned step's start and width, by side. */
async function alignedSteps(page) {
  return page.locator('.aligned-steps g.aligned-step').evaluateAll((gs) => gs.map((g) => {
    const frame = g.querySelector('rect.step-frame');
    return {
      side: g.classList.contains('before') ? 'before' : 'after',
      step: Number(g.dataset.step),
      ms: Number(g.dataset.ms),
      x: Number(frame.getAttribute('x')),
      width: Number(frame.getAttribute('width')),
      parts: g.querySelectorAll('rect:not(.step-frame)').length,
      partsWidth: [...g.querySelectorAll('rect:not(.step-frame)')].reduce((s, r) => s + Number(r.getAttribute('width')), 0),
    };
  }));
}

/** Before's step k and after's step k start at one x, on one ms scale, each cut into its split. */
function checkAligned(steps, pairs) {
  const before = steps.filter((s) => s.side === 'before');
  const after = steps.filter((s) => s.side === 'after');
  assert.equal(before.length, pairs);
  assert.equal(after.length, pairs);
  const scale = before[0].width / before[0].ms;
  for (let k = 0; k < pairs; k++) {
    assert.ok(Math.abs(before[k].x - after[k].x) < 1e-6, `pair ${k + 1} starts at one x`);
    for (const s of [before[k], after[k]]) {
      assert.ok(Math.abs(s.width / s.ms - scale) < 1e-6 * scale, `one scale (${s.side} step ${s.step})`);
      assert.ok(s.parts >= 1 && Math.abs(s.partsWidth - s.width) < 1e-3 * s.width + 1e-6,
        `the split tiles ${s.side} step ${s.step}`);
    }
    if (k > 0) assert.ok(before[k].x >= before[k - 1].x + Math.max(before[k - 1].width, after[k - 1].width));
  }
}

test("HTA's trace_diff comparison: aligned by step, shared as a link, opened with no trace", async (t) => {
  if (lacksTrace(t, CONTROL, TREATED)) return;
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', [CONTROL, TREATED]), 300_000);
  await page.click('.tab:has-text("Compare")');
  const verdict = await page.locator('.verdict').innerText();
  const pairs = await page.locator('.compare section.split:not(.findings-changes) table tbody tr').count();
  assert.ok(pairs >= 2, `${pairs} pairs`);
  checkAligned(await alignedSteps(page), pairs);
  await page.locator('.aligned-steps').screenshot({ path: join(SHOTS, 'compare-aligned-steps.png') });

  const link = await shareLink(page);
  const fragment = link.split('#')[1];
  console.log(`trace_diff comparison link: ${fragment.length} bytes`);
  assert.ok(fragment.startsWith('ttapc1.') && fragment.length <= 8192);
  await page.locator('.export .share-panel').screenshot({ path: join(SHOTS, 'compare-share-panel.png') });
  const headline = await page.locator('.compare-headline').innerText();
  const gpuChanged = await page.locator('section.table:has(h2:has-text("GPU work on both sides")) td.name').allTextContents();
  await context.close();

  const shared = await openPage(browser, link);
  const p = shared.page;
  await p.waitForSelector('.shared-view .verdict');
  assert.equal(await p.locator('.verdict').innerText(), verdict);
  assert.match(await p.locator('.shared-banner').innerText(), /Shared comparison, read-only/);
  assert.match(await p.locator('.shared-banner').innerText(), /table rows with the smallest changes/);
  assert.equal(await p.locator('.compare-headline').innerText(), headline);
  // The kept rows are the largest changes, as the page with the traces had them.
  const kept = await p.locator('section.table:has(h2:has-text("GPU work on both sides")) td.name').allTextContents();
  assert.ok(kept.length >= 10);
  assert.deepEqual(kept.slice(0, 10), gpuChanged.slice(0, 10));
  checkAligned(await alignedSteps(p), pairs);
  assert.equal(await p.locator('.share-view').count(), 0, 'no Share button on a shared view');
  await p.screenshot({ path: join(SHOTS, 'compare-from-link.png') });
  assert.deepEqual([...errors, ...shared.errors], []);
  await shared.context.close();
});

test('a generated comparison link: the same verdict; forged ones refused, texts shown as data', async () => {
  const [b, a] = generatedPair();
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', [b, a]), 120_000);
  await page.click('.tab:has-text("Compare")');
  const verdict = await page.locator('.verdict').innerText();
  assert.match(verdict, /fixed: dataloader-bottleneck/);
  // A generated trace has no module frames: no finding names a module.
  await page.click('.tab:has-text("Findings")');
  assert.ok(await page.locator('article.finding').count() >= 1);
  assert.equal(await page.locator('.finding-module').count(), 0);
  await page.click('.tab:has-text("Compare")');
  const link = await shareLink(page);
  await context.close();

  const shared = await openPage(browser, link);
  await shared.page.waitForSelector('.shared-view .verdict');
  assert.equal(await shared.page.locator('.verdict').innerText(), verdict);
  await shared.context.close();

  // Forged: the link's JSON changed and packed again.
  const fragment = link.split('#')[1];
  const facts = JSON.parse(inflateSync(Buffer.from(fragment.slice('ttapc1.'.length), 'base64url')));
  // Forged links carry no checksum (read as links made before it); with it they are only damaged.
  delete facts.check;
  const forge = (change) => {
    const v = structuredClone(facts);
    change(v);
    return `${site.url}#ttapc1.${deflateSync(JSON.stringify(v)).toString('base64url')}`;
  };
  const refusals = [
    [forge((v) => { v.profiles[0].steps[1].dur_ns = -5; }), /before, step row 2: the step time \(ns\) is -5/],
    [forge((v) => { v.profiles[1].findings = [{ id: 'rm-rf', severity: 'high', ms_per_step: 1, pct_of_step: 1 }]; }), /names the detector "rm-rf"/],
    [forge((v) => { v.profiles.push(v.profiles[0]); }), /3 traces, where a comparison holds 2/],
    [`${site.url}#ttapc9.AAAA`, /newer TorchTraceAP \(comparison link format 9/],
    [`${site.url}#ttapc1.${'A'.repeat(3000)}`, /damaged|ends early/],
  ];
  for (const [url, message] of refusals) {
    const f = await openPage(browser, url);
    await f.page.waitForSelector('.error-panel');
    assert.match(await f.page.locator('.error-panel .error-message').innerText(), message);
    assert.equal(await f.page.locator('.verdict').count(), 0);
    if (message.source.includes('rm-rf')) await f.page.screenshot({ path: join(SHOTS, 'compare-link-forged.png') });
    assert.deepEqual(f.errors, []);
    await f.context.close();
  }
  // Markup in a label is text, never an element.
  const hostile = await openPage(browser, forge((v) => { v.profiles[0].label = '<img src=x onerror="window.pwned=1">'; }));
  await hostile.page.waitForSelector('.shared-view .verdict');
  assert.equal(await hostile.page.locator('.compare-headline td').first().innerText(), '<img src=x onerror="window.pwned=1">');
  assert.equal(await hostile.page.locator('.shared-view img').count(), 0);
  assert.equal(await hostile.page.evaluate(() => window.pwned), undefined);
  await hostile.context.close();
  assert.deepEqual(errors, []);
});

test('an 8-rank run with its straggler shared as a link and opened with no trace', async () => {
  const files = await synthRun('run8-link');
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', files), 300_000);
  await page.click('.tab:has-text("Run")');
  const finding = await page.locator('.run-finding').innerText();
  const ranks = await page.locator('.run-ranks').innerText();
  const link = await shareLink(page);
  assert.ok(link.split('#')[1].startsWith('ttapr1.'));
  console.log(`8-rank run link: ${link.split('#')[1].length} bytes`);
  await context.close();

  const shared = await openPage(browser, link);
  const p = shared.page;
  await p.waitForSelector('.shared-view .run');
  assert.match(await p.locator('.shared-banner').innerText(), /Shared run view, read-only/);
  assert.equal(await p.locator('.run h2').innerText(), 'Run: 8 ranks');
  assert.equal(await p.locator('.run-finding').innerText(), finding);
  assert.match(finding, /straggler rank 5 \(high\)/);
  assert.equal(await p.locator('.run-ranks').innerText(), ranks);
  await p.screenshot({ path: join(SHOTS, 'run-from-link.png') });
  assert.deepEqual([...errors, ...shared.errors], []);
  await shared.context.close();
});
