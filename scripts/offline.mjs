// Trunk post-build hook (after csp.mjs: it lists the page that script wrote): writes into the
// built service worker (sw.js) the files it keeps for offline use, each with its size and SHA-256,
// and a version hashed from them. Every file of the build is listed but sw.js itself and
// `_headers`; a new build with any changed byte has a new version, so browsers install its
// worker and drop the old cache (see www/sw.js).
//
// Usage (Trunk.toml runs it): node scripts/offline.mjs [STAGING_DIR]; TRUNK_STAGING_DIR otherwise.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const dir = process.argv[2] || process.env.TRUNK_STAGING_DIR;
if (!dir) {
  console.error('offline.mjs: no staging directory: pass it, or run from Trunk (TRUNK_STAGING_DIR)');
  process.exit(2);
}
const PLACEHOLDER = '/* offline.mjs: the file list */ null';
const UNLISTED = new Set(['sw.js', '_headers']);

const files = readdirSync(dir, { withFileTypes: true, recursive: true })
  .filter((e) => e.isFile())
  .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
  .filter((path) => !UNLISTED.has(path))
  .sort()
  .map((path) => {
    const bytes = readFileSync(join(dir, path));
    return { path, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  });
if (!files.some((f) => f.path === 'index.html')) {
  console.error(`offline.mjs: ${dir} has no index.html: is it a built site?`);
  process.exit(2);
}
const version = createHash('sha256').update(JSON.stringify(files)).digest('hex').slice(0, 16);

const worker = join(dir, 'sw.js');
const source = readFileSync(worker, 'utf8');
if (source.split(PLACEHOLDER).length !== 2) {
  console.error(`offline.mjs: ${worker} does not hold the placeholder ${PLACEHOLDER} once (already written?)`);
  process.exit(2);
}
writeFileSync(worker, source.replace(PLACEHOLDER, JSON.stringify({ version, files })));
const total = files.reduce((sum, f) => sum + f.bytes, 0);
console.log(`offline.mjs: ${worker}: version ${version}, ${files.length} files, ${total} bytes`);
