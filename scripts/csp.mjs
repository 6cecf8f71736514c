// Trunk post-build hook: writes the site's Content Security Policy into the built page (a <meta>
// right after <meta charset>, before any script) and into `_headers` (the same policy as an HTTP header, plus
// what only a header can say, for static hosts that read that file: Netlify, Cloudflare Pages).
//
// The policy: nothing is allowed unless named. Scripts only from the site itself, plus the
// page's one inline loader script that Trunk writes, by its SHA-256 (no 'unsafe-inline', no
// 'unsafe-eval'); 'wasm-unsafe-eval' is what compiling the site's own WebAssembly needs.
// connect-src: the site, loopback addresses on any port over http and https (a local
// llama-server, vLLM or Ollama), and the origins listed in TTAP_CSP_CONNECT_SRC when the site is
// built (space-separated, e.g. "https://llm.example.com https://10.0.0.5:8000"): an LLM endpoint
// elsewhere must be listed there, or the browser refuses the request. See docs/DEPLOY.md.
// Every source is one the browser accepts: CSP source expressions cannot hold an IPv6 literal
// (Chromium ignores `http://[::1]:*` with a console warning), so none is named or accepted;
// an IPv6 endpoint is reached by a host name.
//
// Usage (Trunk.toml runs it): node scripts/csp.mjs [STAGING_DIR]; TRUNK_STAGING_DIR otherwise.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] || process.env.TRUNK_STAGING_DIR;
if (!dir) {
  console.error('csp.mjs: no staging directory: pass it, or run from Trunk (TRUNK_STAGING_DIR)');
  process.exit(2);
}

const LOOPBACK = ['http://127.0.0.1:*', 'https://127.0.0.1:*', 'http://localhost:*',
  'https://localhost:*'];

/** The extra connect-src origins, each checked to be a plain http(s) origin. */
function extraOrigins() {
  const listed = (process.env.TTAP_CSP_CONNECT_SRC || '').split(/\s+/).filter(Boolean);
  for (const origin of listed) {
    if (/^https?:\/\/\[/.test(origin)) {
      console.error(`csp.mjs: TTAP_CSP_CONNECT_SRC: ${JSON.stringify(origin)}: a CSP cannot name an ` +
        'IPv6 address (browsers ignore it); give the endpoint a host name and list that');
      process.exit(2);
    }
    if (!/^https?:\/\/[A-Za-z0-9.*-]+(:(\d+|\*))?$/.test(origin)) {
      console.error(`csp.mjs: TTAP_CSP_CONNECT_SRC: ${JSON.stringify(origin)} is not an origin ` +
        'such as https://llm.example.com or http://10.0.0.5:8000 (scheme, host, optional port; no path)');
      process.exit(2);
    }
  }
  return listed;
}

function policy(html, extra = []) {
  const hashes = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)]
    .map((m) => `'sha256-${createHash('sha256').update(m[1], 'utf8').digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src 'self' 'wasm-unsafe-eval' ${hashes.join(' ')}`.trim(),
    "worker-src 'self'",
    `connect-src 'self' ${[...LOOPBACK, ...extra].join(' ')}`,
    "img-src 'self' data: blob:",
    "style-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "object-src 'none'",
  ].join('; ');
}

const page = join(dir, 'index.html');
const html = readFileSync(page, 'utf8');
if (html.includes('http-equiv="Content-Security-Policy"')) {
  console.error(`csp.mjs: ${page} already has a Content Security Policy`);
  process.exit(2);
}
const csp = policy(html, extraOrigins());
const meta = `<meta http-equiv="Content-Security-Policy" content="${csp}">`;
const charset = html.match(/<meta charset[^>]*>/);
if (!charset || html.indexOf('<script') < charset.index) {
  console.error(`csp.mjs: ${page} has no <meta charset> before its first script`);
  process.exit(2);
}
const at = charset.index + charset[0].length;
writeFileSync(page, html.slice(0, at) + meta + html.slice(at));
// frame-ancestors cannot be set from a <meta>: only the header can stop framing.
writeFileSync(join(dir, '_headers'), [
  '/*',
  `  Content-Security-Policy: ${csp}; frame-ancestors 'none'`,
  '  X-Content-Type-Options: nosniff',
  '  Referrer-Policy: no-referrer',
  '',
].join('\n'));
console.log(`csp.mjs: ${page}: ${csp}`);
