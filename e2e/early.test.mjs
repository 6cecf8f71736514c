// End-to-end: an early look at a large trace while it is read (issue 39): a generated 160-step
// ResNet-50 training trace (74 MB, `ttap-dev synth` with a DataLoader stall and SIMT fp32 GEMMs
// injected in every step) shows its first whole steps' findings before the whole file is read,
// as `ttap analyze --early` reports them; the whole file's analysis then replaces them and
// names the same problems; a load cancelled after its early look keeps it shown. Prints the
// times to the early look and to the whole analysis (not asserted: the machine's load decides
// them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { servedSite, openPage, shownFindings, cli, devCli, SHOTS, scratchDir } from './support.mjs';

const served = servedSite();

test('a large trace shows its first steps\' findings before it is read whole, as the CLI\'s early look', async () => {
  const dir = await scratchDir('ttap-early-');
  const trace = join(dir, 'resnet50-160-steps.pt.trace.json');
  const inject = Array.from({ length: 160 }, (_, s) => ['--inject', `dataloader-bottleneck@${s}:0.6`, '--inject', `fp32-without-tensor-cores@${s}:0.6`]).flat();
  const made = spawnSync(devCli(), ['synth', '--steps', '160', '--seed', '3', ...inject, '--out', trace]);
  assert.equal(made.status, 0, String(made.stderr));
  const early = JSON.parse(execFileSync(cli(), ['analyze', '--early', '--format', 'json', trace], { encoding: 'utf8' }));
  const earlyIds = early.findings.map((f) => f.id);
  assert.ok(earlyIds.includes('dataloader-bottleneck') && earlyIds.includes('fp32-without-tensor-cores'), earlyIds.join(','));

  const { page, context, errors } = await openPage(served.browser, served.site.url);
  const ended = Number(await page.locator('main').getAttribute('data-loads'));
  const t0 = Date.now();
  await page.setInputFiles('#file-input', trace);
  const look = page.locator('#early-findings');
  await look.waitFor({ timeout: 120_000 });
  const tEarly = Date.now() - t0;
  const heading = await look.locator('h3').innerText();
  assert.match(heading, /^Early findings: steps 10–\d+ \(\d+ whole\), from [\d.]+ % of the file$/);
  const shown = await look.locator('li').evaluateAll((lis) => lis.map((li) => li.dataset.id));
  await page.screenshot({ path: join(SHOTS, 'early-findings.png'), fullPage: true });
  await page.waitForSelector(`main[data-loads="${ended + 1}"]`, { timeout: 300_000 });
  const tWhole = Date.now() - t0;
  // The page's early look is the CLI's, and stays said after the load.
  assert.deepEqual(shown, earlyIds);
  assert.equal(await page.locator('main').getAttribute('data-early'), `${heading}: ${earlyIds.join(',')}`);
  assert.equal(await look.count(), 0, 'the whole analysis replaced the early look');
  const whole = await shownFindings(page);
  for (const id of earlyIds) assert.ok(whole.includes(id), `${id} not in ${whole}`);
  await page.screenshot({ path: join(SHOTS, 'early-then-whole.png') });
  console.log(`early look after ${tEarly} ms, whole analysis after ${tWhole} ms (${heading})`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a load cancelled after its early look keeps the early findings shown, and says so', async () => {
  const dir = await scratchDir('ttap-early-');
  const trace = join(dir, 'resnet50-400-steps.pt.trace.json');
  const inject = Array.from({ length: 400 }, (_, s) => ['--inject', `dataloader-bottleneck@${s}:0.6`]).flat();
  const made = spawnSync(devCli(), ['synth', '--steps', '400', '--seed', '4', ...inject, '--out', trace]);
  assert.equal(made.status, 0, String(made.stderr));
  // One worker reads the whole file: seconds after the early look, time to cancel.
  const { page, context, errors } = await openPage(served.browser, `${served.site.url}?workers=1`);
  await page.setInputFiles('#file-input', trace);
  const look = page.locator('#early-findings');
  await look.waitFor({ timeout: 120_000 });
  const heading = await look.locator('h3').innerText();
  const ids = await look.locator('li').evaluateAll((lis) => lis.map((li) => li.dataset.id));
  assert.ok(ids.includes('dataloader-bottleneck'), ids.join(','));
  await page.click('button.cancel');
  assert.equal(await page.locator('.loading').count(), 0);
  assert.match(await page.locator('.shared-banner').innerText(), /^Early look, read-only: made from part of the trace\. resnet50-400-steps\.pt\.trace\.json \(early look\): the findings of its first whole steps/);
  assert.equal(await page.locator('p.notice').innerText(),
    `Loading cancelled; shown: the early look at resnet50-400-steps.pt.trace.json (${heading.replace('Early findings: ', '')}), what its first steps say, not the whole file's analysis.`);
  assert.deepEqual(await shownFindings(page), ids);
  await page.screenshot({ path: join(SHOTS, 'early-cancelled.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});
