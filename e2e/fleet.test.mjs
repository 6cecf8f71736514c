// End-to-end: a fleet report (what scripts/fleet/fleet.py writes) opened in the page like a
// saved report: its tables as the file has them, names from the file shown as data (a job
// folder named like markup stays text), and a forged report refused while the page keeps what
// it showed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serve, launch, openPage, load, SHOTS, ROOT, scratchDir } from './support.mjs';

const TTAP = join(ROOT, 'target/debug/ttap');
const TTAP_DEV = join(ROOT, 'target/debug/ttap-dev');
// A job folder whose name is markup: the page must show it as text.
const HOSTILE_JOB = '<img src=x onerror="window.pwned=1">';

let site;
let browser;
let dir;

function run(program, args) {
  const done = spawnSync(program, args, { encoding: 'utf8' });
  assert.equal(done.status, 0, `${program} ${args.join(' ')}: ${done.stderr}`);
  return done.stdout;
}

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  dir = await scratchDir('ttap-fleet-e2e-');
  const traces = join(dir, 'traces');
  const stalls = [1, 2, 3, 4].flatMap((s) => ['--inject', `dataloader-bottleneck@${s}:0.9`]);
  run(TTAP_DEV, ['synth', '--ranks', '2', '--steps', '5', '--out', join(traces, 'loader-job'), ...stalls]);
  await mkdir(join(traces, HOSTILE_JOB), { recursive: true });
  run(TTAP_DEV, ['synth', '--model', 'vit_b16', '--steps', '5', '--out', join(traces, HOSTILE_JOB, 'vit.pt.trace.json')]);
  // fleet.py's own functions, without Ray (the Ray half only schedules these calls).
  const program = [
    'import sys',
    `sys.path.insert(0, ${JSON.stringify(join(ROOT, 'scripts/fleet'))})`,
    'import fleet',
    'summaries = fleet.analyze_batch(sys.argv[1], sys.argv[2], fleet.trace_paths(sys.argv[2]))',
    'sys.stdout.write(fleet.fleet_json(fleet.merge(summaries)))',
  ].join('\n');
  await writeFile(join(dir, 'fleet.json'), run('python3', ['-c', program, TTAP, traces]));
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

test('a fleet report opens with its tables, file names shown as data; a forged one is refused', async () => {
  const fleet = JSON.parse(await readFile(join(dir, 'fleet.json'), 'utf8'));
  const { page, errors } = await openPage(browser, site.url);
  await load(page, () => page.setInputFiles('#file-input', join(dir, 'fleet.json')));
  await page.waitForSelector('.fleet');
  assert.match(await page.locator('.fleet .shared-banner').innerText(), /Fleet report, read-only/);
  assert.match(await page.locator('.fleet .shared-banner').innerText(), /3 of 3 traces analyzed/);

  // Anti-patterns in the file's order, each named by this page's catalogue and its id.
  const patterns = await page.locator('.fleet-patterns tbody tr td.pattern code').allInnerTexts();
  assert.deepEqual(patterns, fleet.anti_patterns.map((p) => p.id));
  assert.equal(patterns[0], 'dataloader-bottleneck');
  assert.match(await page.locator('.fleet-patterns tbody tr').first().innerText(), /DataLoader/i);
  const jobs = await page.locator('.fleet-jobs tbody td.name code').allInnerTexts();
  assert.deepEqual(jobs, fleet.jobs.map((j) => j.job));
  assert.ok(jobs.includes(HOSTILE_JOB), `the markup-named job is shown as its text: ${jobs}`);
  const traces = await page.locator('.fleet-traces tbody td.name code').allInnerTexts();
  assert.deepEqual(traces, fleet.worst_traces.map((t) => t.trace));
  // The name stayed text: no element was made from it, no handler ran.
  assert.equal(await page.locator('.fleet img').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.ok(await page.locator('.fleet svg').count() >= 1, 'the chart of time lost');
  await page.screenshot({ path: join(SHOTS, 'fleet-report.png'), fullPage: true });

  // A forged report: an anti-pattern id this version does not know would put the file's words
  // on the page. It is refused, saying where, and the fleet shown stays.
  fleet.anti_patterns[0].id = 'your-gpu-is-broken-call-us';
  await writeFile(join(dir, 'forged.json'), JSON.stringify(fleet, null, 1));
  await load(page, () => page.setInputFiles('#file-input', join(dir, 'forged.json')));
  const panel = page.locator('.error-panel');
  assert.match(await panel.innerText(), /fleet report cannot be shown: anti_patterns\[0\]\.id holds "your-gpu-is-broken-call-us"/);
  assert.match(await panel.innerText(), /run the fleet job again/);
  assert.equal(await page.locator('.fleet-patterns').count(), 1, 'the fleet shown before is kept');
  assert.deepEqual(errors, []);
});
