import { test, expect } from '@playwright/test';

test('nobody signed in sees the sign-in page at any address, and lands there after continuing as guest', async ({ page }) => {
  await page.goto('/services/ledger');
  await expect(page.getByTestId('sign-in')).toBeVisible();
  await expect(page.getByTestId('service-header')).toHaveCount(0);
  await page.getByTestId('continue-as-guest').click();
  await expect(page.getByTestId('service-header')).toContainText('ledger');
  await expect(page).toHaveURL(/\/services\/ledger$/);
  await expect(page.getByTestId('user-teams')).toHaveText('guest, read-only');
});

test('signing out returns to the sign-in page, and a copy of the old session cookie is refused', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('continue-as-guest').click();
  await expect(page.getByTestId('service-row').first()).toBeVisible();
  const copied = await page.context().cookies();
  expect(copied.map((c) => c.name)).toContain('tower_session');
  await page.getByTestId('sign-out').click();
  await expect(page.getByTestId('sign-in')).toBeVisible();
  await page.reload();
  await expect(page.getByTestId('sign-in')).toBeVisible();
  // Someone who copied the cookie before the sign-out (a shared machine, a proxy's log) gets nowhere.
  await page.context().addCookies(copied);
  await page.reload();
  await expect(page.getByTestId('sign-in')).toBeVisible();
  expect((await page.request.get('/api/v1/services')).status()).toBe(401);
});

test('the API refuses anonymous readers with a JSON error', async ({ request }) => {
  const response = await request.get('/api/v1/services');
  expect(response.status()).toBe(401);
  expect((await response.json()).code).toBe('unauthenticated');
});
