// End-to-end: the LLM verdict loop. An unexplained region of a real trace is asked about
// (llama-server on another origin: TTAP_LLM_URL and TTAP_LLM_KEY, started by scripts/test.sh;
// skipped, saying so, without it), the user keeps a label for its window with their own choice
// of anti-pattern (a tiny random model's words name none reliably), a second region is kept as
// "not an anti-pattern", the labels are exported, and the downloaded file is checked and read by
// the CLI (`ttap-dev eval --labels`, when target/debug/ttap-dev is built). A scripted endpoint gives a
// structured answer whose anti-pattern is preselected.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { serve, launch, openPage, load, lacksServer, lacksTrace, devCli, SHOTS, SHARED_TRACES, LLM_URL, LLM_KEY } from './support.mjs';

// A real DDP training trace where the window model flags three windows that no finding explains.
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

/** The trace loaded and the LLM settings filled in; returns the opened page and its region panel. */
async function ready(url, key) {
  const opened = await openPage(browser, site.url);
  const { page } = opened;
  await load(page, () => page.setInputFiles('#file-input', TRACE));
  await page.click('.llm-settings-button');
  await page.fill('#llm-url', url);
  await page.fill('#llm-model', 'codellama-test');
  await page.fill('#llm-key', key);
  await page.fill('#llm-max-tokens', '48');
  await page.press('#llm-max-tokens', 'Tab');
  await page.click('.llm-settings-button');
  const region = page.locator('.unexplained .llm-region');
  await region.waitFor();
  return { ...opened, region };
}

/** Asks the LLM about the region at `index` of the list and waits for its answer. */
async function ask(region, index) {
  await region.locator('.llm-region-select').selectOption({ index });
  const key = await region.locator('.llm-region-select').inputValue();
  await region.locator('.llm-ask').click();
  await region.locator('.llm-send').click();
  await region.locator('.llm-answer.done, .llm-answer.failed').waitFor({ timeout: 60_000 });
  assert.equal(await region.locator('.llm-error').count(), 0, 'the question is answered');
  return key;
}

/** Keeps the chosen region with the user's own `pattern`. */
async function keep(region, pattern) {
  const choice = region.locator('.llm-label-choice');
  await choice.waitFor();
  // Preselected from the answer when its anti_pattern names one; Keep waits for a choice.
  const preselected = await choice.inputValue();
  assert.equal(await region.locator('.llm-keep').isDisabled(), preselected === '');
  assert.match(await region.locator('.llm-label-note').innerText(), /^The answer (says|names no anti-pattern)/);
  await choice.selectOption(pattern);
  assert.equal(await region.locator('.llm-keep').innerText(), 'Keep as label');
  await region.locator('.llm-keep').click();
  await region.locator('.llm-kept').waitFor();
}

test('an unexplained region is kept as a label with the user\'s choice, exported, and read by the CLI', async (t) => {
  if (lacksServer(t) || lacksTrace(t, TRACE)) return;
  const { page, context, requests, errors, region } = await ready(LLM_URL, LLM_KEY);
  assert.equal(await region.locator('.llm-label').count(), 0, 'nothing to keep before an answer');
  assert.equal(await page.locator('.llm-labels-count').innerText(), 'No label kept yet.');

  const first = await ask(region, 1);
  const options = await region.locator('.llm-label-choice option').allTextContents();
  assert.deepEqual(options, [
    'Choose…', 'dataloader-bottleneck', 'host-device-sync', 'pageable-memcpy',
    'fp32-without-tensor-cores', 'allocator-churn', 'launch-bound-small-kernels', 'not an anti-pattern',
  ]);
  await keep(region, 'host-device-sync');
  const [, step, window] = first.split(':').map(Number);
  assert.match(await region.locator('.llm-kept').innerText(), new RegExp(`^Kept: step ${step} \\w[\\w ]* \\(window ${window + 1}\\) is host-device-sync\\.`));
  assert.match(await page.locator('.llm-labels-count').innerText(), /^1 label\(s\) kept for 1 trace\(s\)/);
  // Kept again with another choice: the window's label is replaced, not added.
  await region.locator('.llm-label-choice').selectOption('launch-bound-small-kernels');
  assert.equal(await region.locator('.llm-keep').innerText(), 'Update label');
  await region.locator('.llm-keep').click();
  await page.waitForFunction(() => document.querySelector('.llm-kept')?.textContent.includes('launch-bound-small-kernels'));
  await region.locator('.llm-label-choice').selectOption('host-device-sync');
  await region.locator('.llm-keep').click();
  await page.waitForFunction(() => document.querySelector('.llm-kept')?.textContent.includes('host-device-sync'));

  const second = await ask(region, 0);
  await keep(region, 'none');
  assert.match(await page.locator('.llm-labels-count').innerText(), /^2 label\(s\) kept for 1 trace\(s\)/);
  await region.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'llm-labels.png') });

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('.llm-export-labels').click(),
  ]);
  assert.equal(download.suggestedFilename(), 'tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.labels.json');
  const file = join(SHOTS, 'llm-labels.labels.json');
  await download.saveAs(file);
  const labels = JSON.parse(await readFile(file, 'utf8'));
  assert.equal(labels.length, 2);
  for (const [label, key, pattern] of [[labels[0], first, 'host-device-sync'], [labels[1], second, 'none']]) {
    const [, s, w] = key.split(':').map(Number);
    assert.deepEqual(Object.keys(label), ['step', 'phase', 'pattern', 'window', 'trace', 'fingerprint']);
    assert.equal(label.step, s);
    assert.equal(label.window, w);
    assert.equal(label.pattern, pattern);
    assert.equal(typeof label.phase, 'string');
    assert.equal(label.trace, TRACE_NAME);
    assert.match(label.fingerprint, /^fp1-[0-9a-f]{16}$/);
  }

  // The labels stay in the page: not in local storage, and no request but the LLM's has a body.
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
  assert.ok(!stored.includes('host-device-sync'), 'labels are not stored');
  const bodies = requests.filter((r) => r.body !== null && r.body !== undefined);
  assert.ok(bodies.length >= 2 && bodies.every((r) => r.url.startsWith(LLM_URL)), 'only the LLM requests carry a body');
  assert.deepEqual(errors, []);
  await context.close();

  const report = execFileSync(devCli(), ['eval', '--labels', file, '--trace', TRACE], { encoding: 'utf8' });
  assert.match(report, /^# Window detector on labelled windows\n\n2 labels from /);
  assert.match(report, new RegExp(`\\| ${step} \\| [\\w ]+ \\| ${window + 1} \\| \`host-device-sync\` \\| [01]\\.\\d\\d \\| yes \\|`));
  assert.match(report, /The model agrees with \d of 2 labelled windows/);
  assert.match(report, /AUROC of the probability, anti-pattern against "none": \d\.\d{3}\./);
});

test('a structured answer\'s anti-pattern is preselected and kept as that detector id', async (t) => {
  if (lacksTrace(t, TRACE)) return;
  const said = 'Host-device synchronization (.item() in the loop)';
  const server = createServer((req, res) => {
    const cors = { 'access-control-allow-origin': '*' };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-headers': 'content-type, authorization', 'access-control-allow-methods': 'POST' }).end();
      return;
    }
    req.resume();
    const content = JSON.stringify({ anti_pattern: said, explanation: 'The host waits for the GPU.', fix: 'Keep the loss on the GPU.', confidence: 0.7 });
    res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  try {
    const { page, context, errors, region } = await ready(`http://127.0.0.1:${server.address().port}`, '');
    await page.click('.llm-settings-button');
    await page.click('#llm-stream');
    await page.click('.llm-settings-button');
    const key = await ask(region, 2);
    assert.equal(await region.locator('.llm-anti-pattern').innerText(), said);
    assert.equal(await region.locator('.llm-label-choice').inputValue(), 'host-device-sync', 'preselected from the answer');
    assert.equal(await region.locator('.llm-label-note').innerText(), `The answer says \u201c${said}\u201d: host-device-sync.`);
    assert.ok(!(await region.locator('.llm-keep').isDisabled()));
    await region.locator('.llm-keep').click();
    await region.locator('.llm-kept').waitFor();
    await region.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'llm-labels-preselected.png') });
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('.llm-export-labels').click()]);
    const labels = JSON.parse(await readFile(await download.path(), 'utf8'));
    const [, step, window] = key.split(':').map(Number);
    assert.deepEqual(labels.map((l) => [l.step, l.window, l.pattern]), [[step, window, 'host-device-sync']]);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await new Promise((ok) => server.close(ok));
  }
});
