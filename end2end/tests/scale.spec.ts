// The Overview at fleet scale: 2,000 generated services (`--scale 2000`, fast enough for CI; `cargo xtask bench
// scale` measures 10,000). Only the rows in view are in the DOM, the search finds any service, and a live change
// to a service far down the list is there when it is scrolled to.
//
// This fleet needs its own Tower and sandbox, started here beside the suite's (ports offset from its own).
import { test, expect, type Page } from '@playwright/test';
import { asGuestOn, ownTower } from './own-tower';

const SERVICES = 2000;
const { base, sandboxAt } = ownTower(10, ['--scale', String(SERVICES), '--scale-runs', String(SERVICES)], 230_000);

/** The Overview as this Tower's own guest. */
async function openOverview(page: Page) {
  await asGuestOn(page, base, '/');
  await expect(page.getByTestId('fleet-table')).toBeVisible({ timeout: 30_000 });
}

const rows = (page: Page) => page.getByTestId('service-row');

test('the Overview keeps only the rows in view in the DOM, and counts the whole fleet', async ({ page }) => {
  await openOverview(page);
  // The plan's eight services and the generated ones.
  await expect(page.getByTestId('fleet-counts')).toContainText(`${SERVICES + 8} services`);
  await expect(page.getByTestId('fleet-table')).toHaveAttribute('aria-rowcount', String(SERVICES + 8 + 1));
  await expect(rows(page).first()).toBeVisible();
  const rendered = await rows(page).count();
  expect(rendered).toBeGreaterThan(5);
  expect(rendered).toBeLessThan(500);
  // The tiles count every deployment, not the rows on screen: each generated service runs in dev and prod.
  const deployments = Number((await page.getByTestId('fleet-status').textContent())?.match(/of (\d+) deployments/)?.[1]);
  expect(deployments).toBeGreaterThanOrEqual(SERVICES * 2);
});

test('search finds a service that is not on screen, and clearing it brings the list back', async ({ page }) => {
  await openOverview(page);
  const far = 'svc-1987';
  const first = await rows(page).first().getAttribute('data-service');
  await expect(page.locator(`[data-testid="service-row"][data-service="${far}"]`)).toHaveCount(0);
  await page.getByTestId('search').fill(far);
  await expect(rows(page)).toHaveCount(1);
  await expect(rows(page).first()).toHaveAttribute('data-service', far);
  await expect(page).toHaveURL(/\?q=svc-1987$/);
  await page.getByTestId('search').fill('');
  await expect(rows(page).first()).toHaveAttribute('data-service', first ?? '');
  expect(await rows(page).count()).toBeLessThan(500);
});

test('scrolling reaches the last row, and a live change far down the list shows there', async ({ page }) => {
  await openOverview(page);
  const last = `svc-${String(SERVICES).padStart(4, '0')}`;
  const far = 'svc-1990';
  const farDev = page.locator(`[data-testid="matrix-cell"][data-service="${far}"][data-env="dev"]`);
  // Out of view now, so not in the DOM to patch: the change has to show when the row is rendered.
  await expect(farDev).toHaveCount(0);
  const changed = await fetch(`${sandboxAt}/sandbox/applications/${far}-dev/out-of-sync`, { method: 'POST' });
  expect(changed.status).toBe(200);
  // Give the change time to reach the page while the row is still out of view.
  await expect
    .poll(async () => {
      const services = (await (await page.request.get(`${base}/api/v1/services`)).json()) as Array<{
        name: string; environments: Array<{ environment: string; sync: string }>;
      }>;
      return services.find((s) => s.name === far)?.environments.find((c) => c.environment === 'dev')?.sync;
    }, { timeout: 20_000 })
    .toBe('OutOfSync');
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  const lastRow = page.locator(`[data-testid="service-row"][data-service="${last}"]`);
  await expect(lastRow).toBeVisible();
  await expect(lastRow).toBeInViewport();
  expect(await rows(page).count()).toBeLessThan(500);
  await expect(farDev).toHaveAttribute('data-tone', 'tone-warn');
  await expect(farDev).toContainText('OutOfSync');
});
