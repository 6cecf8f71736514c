// The service worker (registered by offline.js): after the first visit the page opens and
// analyzes with no network.
//
// It answers, from one cache, only same-origin GETs of the site's own files that the build
// listed: scripts/offline.mjs writes OFFLINE below into dist/sw.js (each file's path, size and
// SHA-256, and a version hashed from them). Every other request (an LLM endpoint, another
// origin, anything but a GET, a URL with a query) is left to the browser untouched. A trace
// is never fetched (the page reads it from the file) and never stored.
//
// Updates: a new build has a new version, so its sw.js differs and the browser installs it
// beside the running one; it fills its own cache (checking each file's hash) and waits. The
// next load of the page, with no other tab of it open, hands over to it (an empty answer that
// reloads), and it deletes the older caches of this scope.
const OFFLINE = /* offline.mjs: the file list */ null;

if (!OFFLINE) {
  throw new Error('sw.js: no file list: the site was not built by Trunk with scripts/offline.mjs');
}

const SCOPE = new URL('./', self.location).href;
const PREFIX = `ttap ${SCOPE} `;
const CACHE = `${PREFIX}${OFFLINE.version}`;
/** The listed files by URL path; the folder itself is the page. */
const LISTED = new Map(OFFLINE.files.map((f) => [new URL(f.path, SCOPE).pathname, f.path]));
LISTED.set(new URL(SCOPE).pathname, 'index.html');

/** Lowercase hex SHA-256 of `bytes`. */
async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Fetches `file` past the HTTP cache and stores it, unless its bytes are not the listed ones
 * (a deployment changed under this install: it fails, and the next visit tries again). */
async function store(cache, file) {
  const url = new URL(file.path, SCOPE).href;
  const response = await fetch(url, { cache: 'no-cache' });
  if (!response.ok) throw new Error(`sw.js: ${url}: the server answered ${response.status}`);
  const hash = await sha256(await response.clone().arrayBuffer());
  if (hash !== file.sha256) {
    throw new Error(`sw.js: ${url} is not the file of build ${OFFLINE.version} (another build was deployed meanwhile)`);
  }
  await cache.put(url, response);
}

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => Promise.all(OFFLINE.files.map((f) => store(cache, f)))));
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// A waiting (newer) worker takes over when the running one asks it to, on a page load.
self.addEventListener('message', (event) => {
  if (event.data === 'take-over') self.skipWaiting();
});

/** The answer to a listed file's request: from the cache (the network if it is missing). */
async function answer(request, path) {
  const waiting = self.registration.waiting;
  if (request.mode === 'navigate' && waiting && (await self.clients.matchAll()).length < 2) {
    waiting.postMessage('take-over');
    return new Response('', { headers: { Refresh: '0' } });
  }
  const cache = await caches.open(CACHE);
  return (await cache.match(new URL(path, SCOPE).href)) ?? fetch(request);
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || url.search) return;
  const path = LISTED.get(url.pathname);
  if (path !== undefined) event.respondWith(answer(request, path));
});
