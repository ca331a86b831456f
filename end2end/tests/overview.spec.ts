import { test, expect } from '@playwright/test';
import { sandboxUrl, signInAsGuest, focusNothing } from './session';

// Every test starts as a guest: the sign-in page's "Continue as guest" sets the session cookie.
test.beforeEach(async ({ page }) => {
  await signInAsGuest(page);
});
const components = `${sandboxUrl}/clusters/management/apis/platform.tower.dev/v1alpha1/namespaces/platform/components`;

test('the overview lists every service of the sandbox', async ({ page }) => {
  await page.goto('/');
  const rows = page.getByTestId('service-row');
  await expect(rows).toHaveCount(8);
  await expect(page.locator('[data-testid="service-row"][data-service="payments"]')).toContainText('payments');
  await expect(page.getByTestId('fleet-counts')).toHaveText('8 services · 3 teams');
  await expect(page.getByTestId('stream-indicator')).toHaveText(/Live/);
});

test('a component created after the page loaded appears within 2 s without a reload', async ({ page, request }) => {
  await page.goto('/');
  await expect(page.getByTestId('stream-indicator')).toHaveText(/Live/);
  await expect(page.getByTestId('service-row')).toHaveCount(8);
  // Anything that reloaded the page would drop this marker.
  await page.evaluate(() => { (window as any).__towerNoReload = true; });

  const name = `inventory-${Date.now() % 100000}`;
  const created = await request.post(components, {
    data: {
      apiVersion: 'platform.tower.dev/v1alpha1',
      kind: 'Component',
      metadata: { name, namespace: 'platform' },
      spec: {
        owner: 'shop', repository: `acme/${name}`, description: 'Stock levels per warehouse.',
        template: { name: 'go-service', version: '1.4.0' },
      },
    },
  });
  expect(created.status()).toBe(201);

  await expect(page.locator(`[data-testid="service-row"][data-service="${name}"]`)).toBeVisible({ timeout: 2_000 });
  await expect(page.getByTestId('service-row')).toHaveCount(9);
  expect(await page.evaluate(() => (window as any).__towerNoReload)).toBe(true);

  // And it goes away again as live: a deleted Component leaves the Overview.
  const deleted = await request.delete(`${components}/${name}`);
  expect(deleted.ok()).toBeTruthy();
  await expect(page.locator(`[data-testid="service-row"][data-service="${name}"]`)).toHaveCount(0, { timeout: 2_000 });
});

test('a deep link to a service page loads directly', async ({ page }) => {
  const response = await page.goto('/services/checkout');
  expect(response?.status()).toBe(200);
  await expect(page.getByTestId('service-header')).toContainText('checkout');
  await expect(page.getByTestId('service-owner')).toHaveText('shop');
  // Its dependencies link to their own pages.
  await page.getByRole('link', { name: 'payments' }).click();
  await expect(page).toHaveURL(/\/services\/payments$/);
  await expect(page.getByTestId('service-owner')).toHaveText('payments');
});

test('search narrows the list and lives in the URL', async ({ page }) => {
  await page.goto('/?q=shop');
  await expect(page.getByTestId('service-row')).toHaveCount(3);
  await page.getByTestId('search').fill('ledger');
  await expect(page).toHaveURL(/\?q=ledger$/);
  await expect(page.getByTestId('service-row')).toHaveCount(1);
  await page.keyboard.press('Escape');
  await focusNothing(page);
  await page.keyboard.press('/');
  await expect(page.getByTestId('search')).toBeFocused();
});

test('an unknown service and an unknown route say so', async ({ page }) => {
  await page.goto('/services/does-not-exist');
  await expect(page.getByTestId('service-missing')).toBeVisible();
  await page.goto('/no/such/page');
  await expect(page.getByTestId('not-found')).toBeVisible();
});
