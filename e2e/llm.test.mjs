// End-to-end: asking an LLM about a finding from the built site. The page is served from one
// origin (support.mjs's static server) and talks to llama.cpp's llama-server on another
// (TTAP_LLM_URL and TTAP_LLM_KEY, started by scripts/test.sh; the tests that need it skip, saying
// so, without it), and to a scripted endpoint below for what a tiny random model cannot show
// (a slow stream to cancel, a missing CORS header, a context overflow, a broken stream, silence,
// Ollama's stream with a structured answer, and a server that refuses the answer schema). An
// answer citing what was not sent comes from llama-server itself: the scripted endpoint passes
// the page's request on with the answer schema's fields pinned (`const`), and llama-server's
// grammar makes the model write them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { inflateSync } from 'node:zlib';
import { join } from 'node:path';
import { serve, launch, openPage, load, lacksServer, lacksTrace, SHOTS, SHARED_TRACES, LLM_URL, LLM_KEY } from './support.mjs';

const MODEL = 'codellama-test';
const FINDING = '#finding-dataloader-bottleneck';

let site;
let browser;
let scripted;

before(async () => {
  site = await serve();
  browser = await launch();
  scripted = await scriptedEndpoint();
});

after(async () => {
  await browser?.close();
  await site?.close();
  await scripted?.close();
});

/** The sample loaded, its findings shown, the LLM settings open and filled in. */
async function ready(settings, pageUrl = site.url) {
  const opened = await openPage(browser, pageUrl);
  await load(opened.page, () => opened.page.click('#sample'));
  await configure(opened.page, settings);
  return opened;
}

async function configure(page, { url, key = '', protocol = 'openai', budget, stream = true, timeout, maxTokens = 48 }) {
  if (!(await page.locator('.llm-settings').count())) await page.click('.llm-settings-button');
  await page.fill('#llm-url', url);
  await page.selectOption('#llm-protocol', protocol);
  await page.fill('#llm-model', MODEL);
  await page.fill('#llm-key', key);
  for (const [id, value] of [['#llm-budget', budget], ['#llm-timeout', timeout], ['#llm-max-tokens', maxTokens]]) {
    if (value === undefined) continue;
    await page.fill(id, String(value));
    await page.press(id, 'Tab');
  }
  if ((await page.isChecked('#llm-stream')) !== stream) await page.click('#llm-stream');
}

/** Opens the preview of the sample's finding; returns the exact body it shows. */
async function preview(page) {
  await page.click(`${FINDING} .llm-ask`);
  await page.waitForSelector(`${FINDING} .llm-body`);
  return page.locator(`${FINDING} .llm-body`).textContent();
}

/** Sends the previewed request and waits until the exchange has ended (answer or error). */
async function send(page) {
  await page.click(`${FINDING} .llm-send`);
  await page.waitForSelector(`${FINDING} .llm-answer.done, ${FINDING} .llm-answer.failed`, { timeout: 60_000 });
}

async function errorText(page) {
  return page.locator(`${FINDING} .llm-error`).innerText();
}

test('a finding is previewed, sent to llama-server on another origin, and its answer streams in; cancel stops a stream', async (t) => {
  if (lacksServer(t)) return;
  const { page, context, requests, errors } = await ready({ url: LLM_URL, key: LLM_KEY });
  assert.notEqual(new URL(LLM_URL).origin, new URL(site.url).origin, 'the endpoint is on another origin');
  await page.screenshot({ path: join(SHOTS, 'llm-settings.png') });

  const body = await preview(page);
  const meta = await page.locator(`${FINDING} .llm-meta`).innerText();
  assert.match(meta, new RegExp(`POST ${LLM_URL}/v1/chat/completions`));
  assert.match(meta, /about [\d,]+ tokens: the messages [\d,]+ of the 3,072-token budget/);
  const sent = JSON.parse(body);
  assert.equal(sent.model, MODEL);
  assert.equal(sent.stream, true);
  assert.match(sent.messages[1].content, /dataloader-bottleneck/);
  assert.equal(requests.filter((r) => r.url.startsWith(LLM_URL)).length, 0, 'nothing is sent before Send');
  // Redaction: the preview is made again with the names hidden.
  const hidden = '_MultiProcessingDataLoaderIter';
  assert.ok(body.includes(hidden));
  await page.click('#llm-redact');
  await page.fill('#llm-names', `${hidden}, NoSuchName`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.includes('<name1>'), `${FINDING} .llm-body`);
  const redacted = await page.locator(`${FINDING} .llm-body`).textContent();
  assert.ok(!redacted.includes(hidden), 'the hidden name is gone from the body');
  assert.equal(await page.inputValue('#llm-names'), `${hidden}, NoSuchName`);
  await page.click('#llm-redact');
  await page.fill('#llm-names', '');
  await page.waitForFunction(([sel, text]) => document.querySelector(sel)?.textContent === text, [`${FINDING} .llm-body`, body]);
  await page.locator(FINDING).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'llm-preview.png'), fullPage: true });

  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().startsWith(LLM_URL)),
    send(page),
  ]);
  assert.equal(response.status(), 200);
  assert.match(response.headers()['content-type'], /text\/event-stream/, 'a streamed answer');
  assert.equal(await page.locator(`${FINDING} .llm-error`).count(), 0);
  const answer = await page.locator(`${FINDING} .llm-answer.done .llm-text`).first().textContent();
  assert.ok(answer.length > 0, 'the answer is shown');
  await page.screenshot({ path: join(SHOTS, 'llm-answer.png'), fullPage: true });

  // Cancel: a stream that drips one piece every 150 ms until the client goes away.
  await configure(page, { url: `${scripted.url}/slow`, key: '' });
  await page.click(`${FINDING} .llm-again`);
  await page.click(`${FINDING} .llm-send`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.includes('piece 3'),
    `${FINDING} .llm-answer.streaming .llm-text`);
  await page.screenshot({ path: join(SHOTS, 'llm-streaming.png') });
  await page.click(`${FINDING} .llm-cancel`);
  assert.match(await errorText(page), /^Cancelled/);
  assert.match(await page.locator(`${FINDING} .llm-answer.failed .llm-text`).textContent(), /piece 1 piece 2 piece 3/);
  await waitFor(() => scripted.closed.slow >= 1, 'the endpoint sees the connection closed');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a wrong key, a server that is down, a refused origin and other failures get their message; the analysis stays usable', async (t) => {
  if (lacksServer(t)) return;
  const { page, context, errors } = await ready({ url: LLM_URL, key: 'not-the-key' });
  await preview(page);
  await send(page);
  assert.match(await errorText(page), /refused the API key \(HTTP 401: Invalid API Key\)\. Set the key/);
  await page.screenshot({ path: join(SHOTS, 'llm-error-401.png') });

  const down = await closedPort();
  const origin = new URL(site.url).origin;
  const cases = [
    [{ url: `http://127.0.0.1:${down}` }, new RegExp(`Could not reach http://127.0.0.1:${down}/v1/chat/completions[\\s\\S]*--cors-origins ${origin}`)],
    [{ url: `${scripted.url}/nocors` }, /Could not reach .*\/nocors\/v1\/chat\/completions[\s\S]*CORS[\s\S]*OLLAMA_ORIGINS=/],
    [{ url: `${scripted.url}/context` }, /longer than the model's context \(server: request \(5000 tokens\) exceeds the available context size/],
    [{ url: `${scripted.url}/error` }, /answered HTTP 503: the model is loading/],
    [{ url: `${scripted.url}/broken` }, /could not be read \(the event stream ended before `data: \[DONE\]`\)/],
    [{ url: `${scripted.url}/silent`, timeout: 1 }, /No complete answer within 1 s/],
    [{ url: 'not a url' }, /not a URL/],
  ];
  for (const [settings, expected] of cases) {
    await configure(page, { key: '', ...settings });
    await page.click(`${FINDING} .llm-again`);
    await send(page);
    assert.match(await errorText(page), expected, settings.url);
  }
  // The rest of the page works as before.
  await page.click('.tab:has-text("Overview")');
  assert.match(await page.locator('.facts').innerText(), /A100/);
  await page.click('.tab:has-text("Kernels")');
  assert.ok((await page.locator('tbody tr').count()) > 0);
  await page.click('.tab:has-text("Findings")');
  assert.equal(await page.locator('article.finding').count(), 1);
  assert.deepEqual(errors, []);
  await context.close();
});

test('Ollama\'s stream with a structured answer: its fields are shown, and markup in it stays text', async () => {
  const { page, context, errors } = await ready({ url: `${scripted.url}/ollama`, protocol: 'ollama' });
  const body = JSON.parse(await preview(page));
  assert.equal(body.options.num_predict, 48, 'Ollama\'s body: options.num_predict');
  await send(page);
  const done = page.locator(`${FINDING} .llm-answer.done`);
  assert.equal(await done.locator('.llm-anti-pattern').innerText(), 'DataLoader bottleneck <img src=x onerror="window.pwned=1">');
  assert.match(await done.locator('.llm-fix').innerText(), /num_workers=8/);
  assert.equal(await done.locator('.llm-confidence').innerText(), '85%');
  assert.equal(await page.locator('.llm img, .llm script').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await page.locator(FINDING).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'llm-structured-answer.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('llama-server answers in the schema asked for: its fields are shown, with the check against the request', async (t) => {
  if (lacksServer(t)) return;
  // Room for the schema's longest answer: the tiny model's random strings reach its caps.
  const { page, context, errors } = await ready({ url: LLM_URL, key: LLM_KEY, maxTokens: 2048 });
  const body = JSON.parse(await preview(page));
  assert.equal(body.response_format.type, 'json_schema');
  const schema = body.response_format.json_schema.schema;
  assert.deepEqual(schema.required, ['anti_pattern', 'explanation', 'fix', 'confidence']);
  await send(page);
  const done = page.locator(`${FINDING} .llm-answer.done`);
  assert.equal(await done.locator('.llm-structured').count(), 1, 'shown as fields');
  const answer = JSON.parse(await done.locator('.llm-raw .llm-text').textContent());
  assert.deepEqual(Object.keys(answer).sort(), ['anti_pattern', 'confidence', 'explanation', 'fix']);
  assert.ok(schema.properties.anti_pattern.enum.includes(answer.anti_pattern), answer.anti_pattern);
  assert.ok(answer.confidence >= 0 && answer.confidence <= 1);
  // The tiny model's random text may cite nothing, some figures, or all of them: each has its line.
  assert.match(await done.locator('.llm-evidence').innerText(),
    /^(The explanation cites no figure or event name to check against the request\.|All \d+ figures and names the explanation cites are in the request\.|\d+ of \d+ figures and names the explanation cites are in the request; not in the evidence: .+\.)$/s);
  assert.equal(await page.locator('.llm-fallback').count(), 0, 'the server took the schema');
  assert.deepEqual(errors, []);
  await context.close();
});

test('llama-server\'s answer citing a figure and a kernel that were not sent marks them "not in the evidence", and says it names another anti-pattern', async (t) => {
  if (lacksServer(t)) return;
  const { page, context, errors } = await ready({ url: `${scripted.url}/cites`, key: LLM_KEY, maxTokens: 2048 });
  const body = JSON.parse(await preview(page));
  assert.ok(body.response_format.json_schema.schema.properties.anti_pattern.enum.includes('dataloader-bottleneck'));
  const figure = body.messages[1].content.match(/about ([\d.]+) ms per step/)[1];
  await send(page);
  assert.equal(scripted.bodies.cites.length, 1);
  assert.equal(scripted.bodies.cites[0].status, 200, 'llama-server took the pinned schema');
  const done = page.locator(`${FINDING} .llm-answer.done`);
  assert.equal(await done.locator('.llm-structured').count(), 1, 'shown as fields');
  const answer = JSON.parse(await done.locator('.llm-raw .llm-text').textContent());
  assert.deepEqual(answer.explanation, citing(figure).explanation, 'the model wrote the pinned text');
  assert.ok(answer.confidence >= 0 && answer.confidence <= 1, 'the unpinned field follows the page\'s schema');
  const missing = await done.locator('.llm-cited.not-found').allInnerTexts();
  assert.deepEqual(missing.map((m) => m.replace(/\s*\(not in the evidence\)$/, '')), ['phantom_gemm_kernel', '987.6 ms']);
  assert.deepEqual(await done.locator('.llm-cited.found').allInnerTexts(), [`${figure} ms`], 'the figure sent is found');
  assert.match(await done.locator('.llm-evidence').innerText(),
    /^1 of 3 figures and names the explanation cites are in the request; not in the evidence: phantom_gemm_kernel, 987\.6 ms\.$/);
  assert.match(await done.locator('.llm-differs').innerText(),
    /names “host-device-sync”, not this finding’s anti-pattern “dataloader-bottleneck”/);
  // The model's text stays text: its markup is not markup.
  assert.match(await done.locator('.llm-fix').innerText(), /<img src=x/);
  assert.equal(await page.locator('.llm img, .llm script').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await page.locator(FINDING).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'llm-not-in-evidence.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a server that refuses the answer schema is asked again without it', async () => {
  const { page, context, errors } = await ready({ url: `${scripted.url}/schema400` });
  await preview(page);
  await send(page);
  const done = page.locator(`${FINDING} .llm-answer.done`);
  assert.match(await done.locator('.llm-fallback').innerText(),
    /refused the answer schema \(HTTP 400: response_format is not supported\); the request was sent again without it/);
  assert.equal(await done.locator('.llm-text').innerText(), 'The loader is slow: 987.6 ms per step.');
  const [first, second] = scripted.bodies.schema400.map((b) => JSON.parse(b));
  assert.equal(scripted.bodies.schema400.length, 2);
  assert.equal(first.response_format.type, 'json_schema');
  assert.equal(second.response_format, undefined);
  assert.deepEqual(second.messages, first.messages, 'the same request without the schema');
  assert.deepEqual(errors, []);
  await context.close();
});

test('the only request with a body is the LLM POST: the previewed text, within the budget, no trace events; the key stays in this browser', async (t) => {
  if (lacksServer(t)) return;
  const budget = 600;
  const { page, context, requests } = await ready({ url: LLM_URL, key: LLM_KEY, budget });
  const body = await preview(page);
  await send(page);
  assert.equal(await page.locator(`${FINDING} .llm-error`).count(), 0);
  for (const tab of ['Overview', 'Kernels', 'Operators', 'Findings']) await page.click(`.tab:has-text("${tab}")`);

  const withBody = requests.filter((r) => r.body || !['GET', 'OPTIONS'].includes(r.method));
  assert.equal(withBody.length, 1, JSON.stringify(withBody.map((r) => [r.method, r.url])));
  const [post] = withBody;
  assert.equal(post.method, 'POST');
  assert.equal(post.url, `${LLM_URL}/v1/chat/completions`);
  assert.equal(post.body, body, 'the body sent is the previewed text');
  const offsite = requests.filter((r) => !r.url.startsWith(site.url));
  assert.ok(offsite.every((r) => r.url === post.url), JSON.stringify(offsite.map((r) => r.url)));

  const { messages } = JSON.parse(post.body);
  const tokens = messages.map((m) => Buffer.byteLength(m.content)).reduce((a, b) => a + b, 0) / 4;
  assert.ok(tokens <= budget, `${tokens} estimated tokens over the ${budget} budget`);
  // No raw trace event: none of the Chrome-trace keys, nor the sample's event arguments.
  for (const raw of ['"ph":', '"ts":', '"dur":', '"pid":', '"tid":', '"args":', 'Input Dims', 'External id', '"cat":']) {
    assert.ok(!post.body.includes(raw), `the body holds ${raw}`);
  }
  console.log(`LLM request: ${Buffer.byteLength(post.body)} bytes, about ${Math.ceil(Buffer.byteLength(post.body) / 4)} tokens (messages ${Math.ceil(tokens)} of ${budget})`);

  // The settings live in this browser's storage, the key for this tab's session only, and
  // nowhere else.
  const stored = await page.evaluate(() => localStorage.getItem('torchtraceap.llm-settings.v1'));
  assert.ok(stored.includes(LLM_URL) && !stored.includes(LLM_KEY));
  assert.equal(await page.evaluate(() => sessionStorage.getItem('torchtraceap.llm-key.v1')), LLM_KEY);
  await page.click('.share-button');
  const link = await page.inputValue('#share-link');
  const shared = inflateSync(Buffer.from(link.split('#ttap2.')[1], 'base64url')).toString();
  assert.ok(!shared.includes(LLM_KEY) && !shared.includes(LLM_URL), 'the share link holds no key or endpoint');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.download-json')]);
  const report = await readFile(await download.path(), 'utf8');
  assert.ok(!report.includes(LLM_KEY) && !report.includes(LLM_URL), 'the saved report holds no key or endpoint');
  // They come back with the page.
  await page.reload();
  await page.waitForSelector('#sample');
  await load(page, () => page.click('#sample'));
  await page.click('.llm-settings-button');
  assert.equal(await page.inputValue('#llm-url'), LLM_URL);
  assert.equal(await page.inputValue('#llm-budget'), String(budget));
  await context.close();
});

test('an unexplained region of a shared trace is chosen, previewed and answered whole (not streamed)', async (t) => {
  if (lacksServer(t)) return;
  // A real DDP training trace where the window model flags three windows no finding explains.
  const trace = join(SHARED_TRACES, 'AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz');
  if (lacksTrace(t, trace)) return;
  const { page, context, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', trace));
  await configure(page, { url: LLM_URL, key: LLM_KEY, stream: false });
  const region = page.locator('.unexplained .llm-region');
  await region.waitFor();
  const listed = await page.locator('.unexplained li').count();
  const choices = await region.locator('option').allTextContents();
  assert.ok(listed > 1, `${listed} unexplained regions`);
  assert.equal(choices.length, listed, 'one choice per unexplained region');
  assert.equal(new Set(choices).size, choices.length, `choices are told apart: ${choices}`);
  await region.locator('select').selectOption({ index: 1 });
  await region.locator('.llm-ask').click();
  const body = JSON.parse(await region.locator('.llm-body').textContent());
  assert.equal(body.stream, false);
  assert.match(body.messages[1].content, /Flagged by the window detector/);
  await region.locator('.llm-send').click();
  await region.locator('.llm-answer.done, .llm-answer.failed').waitFor({ timeout: 60_000 });
  assert.equal(await region.locator('.llm-error').count(), 0);
  assert.ok((await region.locator('.llm-text').first().textContent()).length > 0, 'the whole answer is shown');
  await region.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'llm-region.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

/** A port nothing listens on. */
async function closedPort() {
  const server = createServer();
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  await new Promise((ok) => server.close(ok));
  return port;
}

async function waitFor(condition, what, timeout = 5000) {
  const end = Date.now() + timeout;
  while (!condition()) {
    if (Date.now() > end) assert.fail(`timed out: ${what}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

/** The text fields of an answer that cites the request's figure, and a figure and a kernel
 * that were not sent, names another anti-pattern, and holds markup. */
function citing(figure) {
  return {
    anti_pattern: 'host-device-sync',
    explanation: `The DataLoader stalls about ${figure} ms per step while the phantom_gemm_kernel kernel takes 987.6 ms.`,
    fix: 'DataLoader(num_workers=8) <img src=x onerror="window.pwned=2">',
  };
}

/** An endpoint whose answers are scripted by the first path segment. */
async function scriptedEndpoint() {
  const closed = { slow: 0 };
  const bodies = { schema400: [], cites: [] };
  const cors = { 'access-control-allow-origin': '*' };
  const sse = (text) => `data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\n`;
  const server = createServer((req, res) => {
    const kind = req.url.split('/')[1];
    if (req.method === 'OPTIONS') {
      res.writeHead(204, kind === 'nocors' ? {} : {
        ...cors, 'access-control-allow-headers': 'content-type, authorization', 'access-control-allow-methods': 'POST',
      }).end();
      return;
    }
    const stream = { ...cors, 'content-type': 'text/event-stream' };
    if (kind === 'cites' || kind === 'schema400') {
      let text = '';
      req.on('data', (d) => { text += d; });
      req.on('end', () => (kind === 'cites' ? pinned(text, req, res) : refused(text, res, stream)));
      return;
    }
    req.resume();
    switch (kind) {
      case 'slow': {
        res.writeHead(200, stream);
        let n = 0;
        const timer = setInterval(() => res.write(sse(`piece ${++n} `)), 150);
        res.on('close', () => { clearInterval(timer); closed.slow += 1; });
        return;
      }
      case 'nocors':
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`${sse('hidden')}data: [DONE]\n\n`);
        return;
      case 'context':
        res.writeHead(400, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ error: {
          code: 400, type: 'exceed_context_size_error', n_prompt_tokens: 5000, n_ctx: 4096,
          message: 'request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it',
        } }));
        return;
      case 'error':
        res.writeHead(503, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the model is loading' } }));
        return;
      case 'broken':
        res.writeHead(200, stream).end(sse('half an answer'));
        return;
      case 'silent':
        res.on('close', () => {});
        return;
      case 'ollama': {
        res.writeHead(200, { ...cors, 'content-type': 'application/x-ndjson' });
        const answer = JSON.stringify({
          anti_pattern: 'DataLoader bottleneck <img src=x onerror="window.pwned=1">',
          explanation: 'The GPU waits 20 ms per step for the next batch.',
          fix: 'DataLoader(dataset, num_workers=8, pin_memory=True, persistent_workers=True)',
          confidence: 0.85,
        });
        const pieces = answer.match(/.{1,16}/gs);
        const lines = pieces.map((p) => `${JSON.stringify({ model: MODEL, message: { role: 'assistant', content: p }, done: false })}\n`);
        lines.push(`${JSON.stringify({ model: MODEL, message: { role: 'assistant', content: '' }, done: true })}\n`);
        // Cut across line boundaries, as a network would.
        const all = lines.join('');
        for (let i = 0; i < all.length; i += 37) res.write(all.slice(i, i + 37));
        res.end();
        return;
      }
      default:
        res.writeHead(404, cors).end();
    }
  });
  /** A server without structured output: refuses the schema, answers a request without it. */
  function refused(text, res, stream) {
    bodies.schema400.push(text);
    if (JSON.parse(text).response_format) {
      res.writeHead(400, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ error: {
        code: 400, type: 'invalid_request_error', message: 'response_format is not supported',
      } }));
      return;
    }
    res.writeHead(200, stream).end(`${sse('The loader is slow: 987.6 ms per step.')}data: [DONE]\n\n`);
  }
  /** The page's request passed on to llama-server with the schema's text fields pinned to
   * `citing`'s answer; its reply (a stream) passed back as it comes. */
  async function pinned(text, req, res) {
    const body = JSON.parse(text);
    const figure = body.messages[1].content.match(/about ([\d.]+) ms per step/)[1];
    const properties = body.response_format.json_schema.schema.properties;
    for (const [field, value] of Object.entries(citing(figure))) properties[field] = { type: 'string', const: value };
    const reply = await fetch(`${LLM_URL}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: req.headers.authorization },
      body: JSON.stringify(body),
    });
    bodies.cites.push({ status: reply.status });
    res.writeHead(reply.status, { ...cors, 'content-type': reply.headers.get('content-type') });
    for await (const chunk of reply.body) res.write(chunk);
    res.end();
  }

  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    closed,
    bodies,
    close: () => { server.closeAllConnections(); return new Promise((ok) => server.close(ok)); },
  };
}
