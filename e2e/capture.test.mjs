// End-to-end: a graph capture trace given beside a trace of graph replays (the "Graph capture…"
// button): the replayed kernels get the operator and module that launched them at capture, as
// `ttap analyze --capture` has them (tests/fixtures/graph-warm-up.pt.trace.json and
// graph-replay.pt.trace.json, written by hand); removing the capture reads replays alone again;
// a capture that does not read says so, naming it, and the page keeps what it showed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { servedSite, openPage, load, cli, ROOT, SHOTS, scratchDir } from './support.mjs';

const WARM_UP = join(ROOT, 'tests/fixtures/graph-warm-up.pt.trace.json');
const REPLAY = join(ROOT, 'tests/fixtures/graph-replay.pt.trace.json');

const served = servedSite();

/** The Overview's "CUDA/HIP graphs" fact. */
async function graphsFact(page) {
  await page.click('.tab:has-text("Overview")');
  return page.locator('.fact', { hasText: 'CUDA/HIP graphs' }).locator('dd').innerText();
}

test('a capture trace given beside a replay ties its kernels to their operators and modules, as the CLI does', async () => {
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', REPLAY));
  assert.match(await graphsFact(page), /none tied to the operator that launched it \(the trace records no capture/);

  await page.setInputFiles('#capture-input', WARM_UP);
  assert.match(await page.locator('#capture-chosen').innerText(), /tied to the capture trace graph-warm-up\.pt\.trace\.json/);
  await load(page, () => page.setInputFiles('#file-input', REPLAY));
  const [cliReport] = JSON.parse(execFileSync(cli(), ['analyze', '--format', 'json', '--capture', WARM_UP, REPLAY], { encoding: 'utf8' }));
  assert.equal(cliReport.report.graphs.tied_kernels, 2);
  const shown = await graphsFact(page);
  assert.match(shown, /2 of them \(2\.00 ms\) tied by kernel order and name to the operators that launched the same kernels \(in the capture trace graph-warm-up\.pt\.trace\.json\), 0\.00 ms unattributed/);
  await page.screenshot({ path: join(SHOTS, 'graph-capture-overview.png'), fullPage: true });
  // The module tree holds both replayed kernels under the module that launched them.
  await page.click('.tab:has-text("Modules")');
  const row = page.locator('.module-tree tbody tr', { hasText: 'Block_0' });
  await row.waitFor();
  assert.match(await row.innerText(), /^Block_0\t2\.00 ms\t100\.0%/);
  await page.screenshot({ path: join(SHOTS, 'graph-capture-modules.png'), fullPage: true });

  // Removed: the next load reads the replays alone again.
  await page.click('#capture-remove');
  assert.equal(await page.locator('#capture-chosen').count(), 0);
  await load(page, () => page.setInputFiles('#file-input', REPLAY));
  assert.match(await graphsFact(page), /none tied/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a capture trace that does not read fails the load, naming it, and the page keeps what it showed', async () => {
  const scratch = await scratchDir('ttap-capture-');
  const notes = join(scratch, 'notes.json');
  await writeFile(notes, 'not a trace\n');
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', REPLAY));
  await page.setInputFiles('#capture-input', notes);
  await load(page, () => page.setInputFiles('#file-input', REPLAY));
  const panel = page.locator('.error-panel');
  assert.match(await panel.locator('.error-message').innerText(),
    /^the graph capture trace notes\.json, given to tie graph-replay\.pt\.trace\.json's graph replays to, could not be read: .*JSON.* Remove the capture \(or choose another\), then open graph-replay\.pt\.trace\.json again\./s);
  assert.match(await graphsFact(page), /none tied/, 'the replay read before is still shown');
  await page.screenshot({ path: join(SHOTS, 'graph-capture-error.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});
