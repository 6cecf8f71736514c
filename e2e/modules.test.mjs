// End-to-end: the Modules tab on a real ResNet-18 training trace recorded with module frames:
// the tree as the CLI's `ttap modules --json` has it, sorting siblings and choosing the depth;
// and its findings naming their module as `ttap analyze` does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { servedSite, openPage, load, lacksTrace, cli, SHOTS, SHARED_TRACES } from './support.mjs';

const TRACE = join(SHARED_TRACES, 'AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz');

const served = servedSite();

test('the module tree of a real ResNet-18 training trace, sorted and cut to a depth', async (t) => {
  if (lacksTrace(t, TRACE)) return;
  const { page, context, errors } = await openPage(served.browser, served.site.url);
  await load(page, () => page.setInputFiles('#file-input', TRACE), 300_000);
  // Each finding names the module frame holding most of its evidence's time, as the CLI does.
  const shownModules = await page.locator('article.finding').evaluateAll((els) => els.map((e) =>
    [e.id.replace(/^finding-/, ''), e.querySelector('.finding-module code')?.textContent ?? null]));
  assert.ok(shownModules.length >= 1 && shownModules.every(([, m]) => m === 'ResNet_0'), JSON.stringify(shownModules));
  const analyzed = JSON.parse(spawnSync(cli(), ['analyze', '--format', 'json', TRACE], { encoding: 'utf8' }).stdout);
  assert.deepEqual(shownModules, analyzed[0].report.findings.map((f) => [f.id, f.module ?? null]));
  await page.locator('article.finding').first().screenshot({ path: join(SHOTS, 'finding-module-resnet18.png') });
  await page.click('.tab:has-text("Modules")');
  // A row's name, without the " (label)" that marks a record_function label.
  const names = async () => (await page.locator('.module-tree tbody td.module-name').allInnerTexts())
    .map((s) => s.replace(/ \(label\)$/, ''));
  const shown = await names();
  assert.equal(shown[0].trim(), 'ResNet_0');
  const tree = JSON.parse(spawnSync(cli(), ['modules', '--json', TRACE], { encoding: 'utf8' }).stdout);
  // Depth 3 by default: every node of the CLI's tree down to depth 3, in its order.
  const expected = tree.nodes.filter((n) => n.depth <= 3).map((n) => n.name);
  assert.deepEqual(shown.map((s) => s.trim()), expected);
  await page.screenshot({ path: join(SHOTS, 'modules-resnet18.png') });

  await page.selectOption('.module-depth', '1');
  const top = (await names()).map((s) => s.trim());
  assert.ok(top.length > 3 && top.includes('Sequential_0') && !top.includes('BasicBlock_0'), top.join(', '));
  await page.selectOption('.module-sort', 'name');
  // Top-level frames, and ResNet_0's children (indented rows after it), each A to Z.
  const rows = await names();
  const roots = rows.filter((r) => !r.startsWith('\u00a0'));
  assert.deepEqual(roots, [...roots].sort());
  const start = rows.indexOf('ResNet_0') + 1;
  const end = rows.findIndex((r, k) => k >= start && !r.startsWith('\u00a0'));
  const children = rows.slice(start, end < 0 ? rows.length : end).map((r) => r.trim());
  assert.ok(children.length > 3);
  assert.deepEqual(children, [...children].sort());
  assert.deepEqual(errors, []);
  await context.close();
});
