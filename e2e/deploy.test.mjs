// End-to-end: the built site as a static host serves it (docs/DEPLOY.md): under a deep sub-path,
// with the headers of dist/_headers. The sample, a share link and the Perfetto export work there;
// no request leaves the sub-path; the browser prints no Content Security Policy message (every
// source of the policy is valid); an LLM endpoint the policy does not name gets the site's-policy
// message, and nothing is sent to it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serve, hostHeaders, launch, load, shownFindings, DIST, SHOTS } from './support.mjs';

const BASE = '/some/sub/path/';
const FINDING = '#finding-dataloader-bottleneck';

let site;
let browser;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  site = await serve(DIST, BASE, await hostHeaders());
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

/** A page at `url` recording its requests and console lines; page errors fail the test. */
async function visit(url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const requests = [];
  const logs = [];
  const errors = [];
  context.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector('#sample');
  return { context, page, requests, logs, errors };
}

const cspLines = (logs) => logs.filter((l) => /content.security.policy|CSP/i.test(l));

test('under a sub-path with the host headers: the sample, a share link and the Perfetto export, no CSP message', async () => {
  const a = await visit(site.url);
  await load(a.page, () => a.page.click('#sample'));
  assert.deepEqual(await shownFindings(a.page), ['dataloader-bottleneck']);
  await a.page.screenshot({ path: join(SHOTS, 'deploy-sub-path.png'), fullPage: true });

  const [download] = await Promise.all([a.page.waitForEvent('download'), a.page.click('.download-perfetto')]);
  assert.equal(download.suggestedFilename(), 'resnet50-a100-dataloader.perfetto.json');
  const exported = JSON.parse(await readFile(await download.path(), 'utf8'));
  const slices = exported.traceEvents.filter((e) => e.cat === 'ttap.finding' && e.ph === 'b');
  assert.ok(slices.length > 0, 'the findings track');
  assert.ok(slices.every((e) => e.name === 'dataloader-bottleneck' && e.args.fix), JSON.stringify(slices[0]));
  assert.ok(exported.traceEvents.some((e) => e.cat === 'ttap.step_split'), 'the step split');
  assert.ok(exported.traceEvents.filter((e) => e.ph === 'X').length > 1000, 'the trace events');

  await a.page.click('.share-button');
  const link = await a.page.inputValue('#share-link');
  assert.ok(link.startsWith(`${site.url}#ttap2.`), link);
  assert.deepEqual(a.requests.filter((u) => !u.startsWith(site.url) && !u.startsWith('blob:')), []);
  assert.deepEqual(cspLines(a.logs), [], 'no CSP message');
  assert.deepEqual(a.errors, []);
  await a.context.close();

  const b = await visit(link);
  assert.deepEqual(await shownFindings(b.page), ['dataloader-bottleneck']);
  assert.equal(await b.page.locator('.download-perfetto').count(), 0, 'a link holds no events to export');
  await b.page.screenshot({ path: join(SHOTS, 'deploy-sub-path-link.png'), fullPage: true });
  assert.deepEqual(b.requests.filter((u) => !u.startsWith(site.url)), []);
  assert.deepEqual(cspLines(b.logs), [], 'no CSP message');
  assert.deepEqual(b.errors, []);
  await b.context.close();
});

test('an LLM endpoint the policy does not name: the panel says it is the site policy, and nothing is sent', async () => {
  const { page, context, requests, logs } = await visit(site.url);
  await load(page, () => page.click('#sample'));
  await page.click('.llm-settings-button');
  await page.fill('#llm-url', 'https://llm.example.com/v1');
  await page.fill('#llm-model', 'm');
  await page.press('#llm-model', 'Tab');
  await page.click(`${FINDING} .llm-ask`);
  await page.click(`${FINDING} .llm-send`);
  await page.waitForSelector(`${FINDING} .llm-answer.failed`, { timeout: 30_000 });
  const message = await page.locator(`${FINDING} .llm-error`).innerText();
  assert.match(message, /site's security policy/);
  assert.match(message, /TTAP_CSP_CONNECT_SRC="https:\/\/llm\.example\.com"/);
  await page.screenshot({ path: join(SHOTS, 'deploy-llm-blocked.png') });
  assert.deepEqual(requests.filter((u) => u.includes('example.com')), []);
  assert.deepEqual(cspLines(logs), [], 'not even a violation: the request was never made');
  await context.close();
});
