// End-to-end: retraining the window model in the page on kept labels. The real DDP ResNet-18
// trace is loaded, labels are imported (the file Export labels writes, made here from
// `ttap analyze --format json`: its flagged windows labelled "not an anti-pattern", plus one
// label for a trace that is not loaded), Retrain fits a smartcore forest in the worker on the
// bundled base set plus those labels, and the labelled windows' scores fall, shown in the
// table of changed windows and in the report's unexplained regions. Download model gives a
// model file the CLI reads (`ttap-dev eval --model`), and Back to the bundled model restores every
// score. Nothing but the site's own files is requested.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { serve, launch, openPage, load, analyze, labelsFor, lacksTrace, cli, devCli, SHOTS, SHARED_TRACES, TTAP_DEV } from './support.mjs';

const TRACE_NAME = 'tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz';
const TRACE = join(SHARED_TRACES, 'AMD-AGI__TraceLens', TRACE_NAME);

let site;
let browser;

before(async () => {
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

/** The rows of the changed-windows table: window, label, before and after (0..1), verdict. */
// Rows of the table of moved windows, at most (`MAX_CHANGES` in web/src/page/llm/view.rs).
const SHOWN_ROWS = 50;

async function changes(page) {
  return page.locator('.llm-changes tbody tr').evaluateAll((rows) => rows.map((r) => {
    const [window, label, score, verdict] = [...r.cells].map((c) => c.textContent);
    const [before, after] = score.split('→').map((s) => Number(s.trim().replace('%', '')) / 100);
    return { window, label, before, after, verdict };
  }));
}

const unexplained = (page) => page.locator('.unexplained li').allTextContents();

test('kept labels retrain the window model in the page, which rescores the trace; the model downloads; the bundled one comes back', async (t) => {
  if (lacksTrace(t, TRACE)) return;
  cli();
  devCli();
  const analyzed = analyze(TRACE);
  const flagged = (w) => w.anomaly_probability > 0.5;
  // The least suspicious window the model still scores is kept as the anti-pattern it names.
  const scored = analyzed.report.windows.filter((w) => w.anomaly_probability > 0);
  const raised = scored.reduce((a, b) => (b.anomaly_probability < a.anomaly_probability ? b : a));
  const labels = labelsFor(analyzed, TRACE_NAME, (w) => (flagged(w) ? 'none' : w === raised ? w.predicted_type : null));
  assert.ok(labels.length >= 10, `${labels.length} windows to label`);
  const up = labels.find((l) => l.pattern !== 'none');
  assert.ok(up && raised.anomaly_probability <= 0.5, 'a window the model does not flag is labelled an anti-pattern');
  const other = { ...labels[0], trace: 'other-rank.json.gz', fingerprint: 'fp1-0000000000000000' };
  await mkdir(SHOTS, { recursive: true });
  const file = join(SHOTS, 'retrain.labels.json');
  await writeFile(file, JSON.stringify([...labels, other], null, 2));

  const { page, context, requests, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', TRACE));
  const bar = page.locator('.llm-labels');
  await bar.waitFor();
  assert.equal(await bar.locator('.llm-retrain').isDisabled(), true, 'nothing to retrain on yet');
  assert.match(await bar.locator('.llm-retrain-why').innerText(), /^Keep labels first/);
  const bundled = await unexplained(page);
  assert.ok(bundled.length > 0, 'the bundled model flags unexplained regions');

  await bar.locator('.llm-import-labels input').setInputFiles(file);
  await page.waitForFunction((n) => document.querySelector('.llm-labels-count')?.textContent.startsWith(`${n} label(s) kept for 2 trace(s)`), labels.length + 1);
  await bar.locator('.llm-retrain').click();
  await bar.locator('.llm-retrained').waitFor({ timeout: 120_000 });
  assert.equal(await bar.locator('.llm-retrain-error').count(), 0);
  const summary = await bar.locator('.llm-retrain-summary').innerText();
  assert.match(summary, new RegExp(`^Retrained in this page on the base set \\(\\d+ windows\\) and ${labels.length} kept label\\(s\\) in [\\d.]+ s`));
  t.diagnostic(summary);
  assert.match(await bar.locator('.llm-left-out').innerText(),
    /Left out: 1 label\(s\) for other-rank\.json\.gz \(fp1-0000000000000000\) are for another trace than the one shown/);

  // Every labelled window's score moved toward "not an anti-pattern", and most are cleared.
  const rows = await changes(page);
  const byWindow = (l) => `step ${l.step} ${l.phase} (window ${l.window + 1})`;
  const lifted = rows.find((r) => r.window === byWindow(up));
  assert.ok(lifted, `${byWindow(up)}, kept as ${up.pattern}, moved`);
  assert.equal(lifted.label, up.pattern);
  assert.ok(lifted.after > lifted.before, `${lifted.window}: ${lifted.before} -> ${lifted.after}`);
  // The table lists the SHOWN_ROWS windows that moved most: when it is full, the labelled
  // windows must fill it (all but the lifted one), else at least half of them must be there.
  const most = rows.length >= SHOWN_ROWS ? SHOWN_ROWS - 1 : Infinity;
  const half = Math.min((labels.length - 1) / 2, most);
  const labelled = rows.filter((r) => r.label === 'not an anti-pattern');
  assert.ok(labelled.length >= half, `${labelled.length} labelled windows moved`);
  for (const r of labelled) assert.ok(r.after < r.before, `${r.window}: ${r.before} -> ${r.after}`);
  const cleared = rows.filter((r) => r.verdict === 'cleared');
  assert.ok(cleared.length >= half, `${cleared.length} of ${labels.length - 1} windows kept normal cleared`);
  const named = new Set(labels.map(byWindow));
  assert.ok(cleared.every((r) => named.has(r.window) || r.label === ''), 'rows name their windows');
  // The report follows the new model: fewer unexplained regions.
  const retrained = await unexplained(page);
  assert.ok(retrained.length < bundled.length, `${bundled.length} -> ${retrained.length} unexplained regions`);
  await bar.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'retrain.png'), fullPage: false });

  // The model downloads as the CLI's model file, saying it was retrained in the browser.
  const [download] = await Promise.all([page.waitForEvent('download'), bar.locator('.llm-download-model').click()]);
  assert.equal(download.suggestedFilename(), 'window-forest.retrained.json');
  const modelFile = join(SHOTS, 'window-forest.retrained.json');
  await download.saveAs(modelFile);
  const model = JSON.parse(await readFile(modelFile, 'utf8'));
  assert.equal(model.format, 'torchtraceap.window-forest');
  assert.equal(model.anomaly.trees.length, 40);
  assert.match(model.provenance.command, new RegExp(`^retrained in the browser on the base set \\(\\d+ windows\\) and ${labels.length} kept labels$`));
  const mine = join(SHOTS, 'retrain.mine.labels.json');
  await writeFile(mine, JSON.stringify(labels));
  const evaluated = execFileSync(TTAP_DEV, ['eval', '--model', modelFile, '--labels', mine, '--trace', TRACE], { encoding: 'utf8' });
  assert.match(evaluated, new RegExp(`^# Window detector on labelled windows\n\n${labels.length} labels from `));

  // Back to the bundled model: every score as before.
  await bar.locator('.llm-bundled').click();
  await page.waitForFunction(() => document.querySelector('.llm-retrain-summary')?.textContent.startsWith('The bundled model scores the windows again'));
  const back = await changes(page);
  assert.equal(back.length, rows.length, 'the same windows move back');
  const retrainedScore = new Map(rows.map((r) => [r.window, r]));
  for (const r of back) {
    const there = retrainedScore.get(r.window);
    assert.ok(there, `${r.window} moved back without having moved`);
    assert.deepEqual([r.before, r.after, r.label], [there.after, there.before, there.label], r.window);
  }
  assert.deepEqual(await unexplained(page), bundled);
  assert.equal(await bar.locator('.llm-download-model').count(), 0);

  const outside = requests.filter((r) => !r.url.startsWith(site.url));
  assert.deepEqual(outside, [], 'nothing leaves the site');
  assert.ok(requests.some((r) => r.url.endsWith('/models/base-set.bin.gz')), 'the base set is the site\'s');
  assert.deepEqual(errors, []);
  await context.close();
});
