// End-to-end: the built site in headless Chromium, driven like a user.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { serve, launch, openPage, SHOTS } from './support.mjs';

let site;
let browser;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  site = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

test('the sample trace is one click away and shows its findings', async () => {
  const { page, context, errors } = await openPage(browser, site.url);
  await page.screenshot({ path: join(SHOTS, 'welcome.png') });
  await page.click('#sample');
  await page.waitForSelector('.finding', { timeout: 60_000 });
  const titles = await page.locator('.finding h3').allTextContents();
  assert.ok(titles.some((t) => /DataLoader|input pipeline/i.test(t)), `findings: ${titles}`);
  await page.screenshot({ path: join(SHOTS, 'findings-sample.png'), fullPage: true });
  await page.click('text=Overview');
  await page.waitForSelector('.chart svg');
  await page.screenshot({ path: join(SHOTS, 'overview-sample.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});
