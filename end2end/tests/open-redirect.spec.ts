// The open-redirect payload table, through the whole sign-in flow in Chromium: whatever `return_to` a link
// carries, the browser ends up on Tower after signing in, and never asks another origin for anything. The same
// table is a unit test of the server's guard (`server/src/sinks.rs`).
import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { sandboxUrl } from './session';

type Payload = { payload: string; why: string };

const payloads: Payload[] = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', 'data', 'open-redirect-payloads.json'), 'utf8'),
);

/** Signs in as `ada` through the forge, starting from a link that carries `returnTo`; returns every origin
 * the browser tried to reach outside Tower and the forge, and where it ended. */
async function signInFrom(page: Page, baseURL: string, returnTo: string) {
  const tower = new URL(baseURL).origin;
  const allowed = new Set([tower, new URL(sandboxUrl).origin]);
  const escaped: string[] = [];
  // Anything off Tower and the forge is recorded and never reaches the network.
  await page.context().route(
    (url) => !allowed.has(url.origin),
    async (route) => {
      escaped.push(route.request().url());
      await route.abort();
    },
  );
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame() && !frame.url().startsWith('about:')) {
      const origin = new URL(frame.url()).origin;
      if (!allowed.has(origin)) escaped.push(frame.url());
    }
  });
  await page.goto(`/auth/github/start?return_to=${encodeURIComponent(returnTo)}`);
  await page.locator('[data-testid="identity-ada"]').click();
  await page.waitForURL((url) => url.origin === tower && !url.pathname.startsWith('/auth/'), {
    waitUntil: 'commit',
  });
  return { escaped, landed: new URL(page.url()) };
}

test('the reported tab payload returns the user to the Overview after signing in', async ({ page, baseURL }) => {
  const { escaped, landed } = await signInFrom(page, baseURL!, '/\t/evil.example/x');
  expect(escaped).toEqual([]);
  expect(landed.origin).toBe(new URL(baseURL!).origin);
  expect(landed.pathname).toBe('/');
  await expect(page.getByTestId('user-name')).toBeVisible();
});

test('a local return path survives sign-in with its query', async ({ page, baseURL }) => {
  const { escaped, landed } = await signInFrom(page, baseURL!, '/services/payments?tab=databases');
  expect(escaped).toEqual([]);
  expect(landed.pathname).toBe('/services/payments');
  expect(landed.search).toBe('?tab=databases');
});

test.describe('open-redirect payloads', () => {
  expect(payloads.length).toBeGreaterThanOrEqual(30);
  payloads.forEach(({ payload, why }, index) => {
    test(`#${index + 1} ${why}: stays on Tower`, async ({ page, baseURL }) => {
      const { escaped, landed } = await signInFrom(page, baseURL!, payload);
      expect(escaped, `${JSON.stringify(payload)} reached another origin`).toEqual([]);
      expect(landed.origin, JSON.stringify(payload)).toBe(new URL(baseURL!).origin);
    });
  });
});
