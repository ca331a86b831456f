import { test, expect } from '@playwright/test';
import * as path from 'node:path';
import { signInAsGuest } from '../tests/session';

// The README's screenshots, retaken on a fresh sandbox: `TOWER_SCREENSHOTS=1 npx playwright test
// --config playwright.demo.config.ts screenshots`. Skipped otherwise, so the test run never rewrites docs/.
const docs = path.resolve(__dirname, '../../docs');

test.skip(!process.env.TOWER_SCREENSHOTS, 'set TOWER_SCREENSHOTS=1 to retake the README screenshots');
test.use({ viewport: { width: 1280, height: 720 } });

test('the Overview and a service page, as a guest sees them', async ({ page }) => {
  await signInAsGuest(page, '/');
  // Wait for the demo's first build to reach the feed, so the picture shows the platform moving.
  await expect(page.getByTestId('activity-item').first()).toBeVisible();
  await expect.poll(async () => (await page.getByTestId('activity-item').first().innerText()).includes('search'),
    { timeout: 30_000 }).toBe(true);
  await page.screenshot({ path: path.join(docs, 'overview.png') });
  await page.goto('/services/payments');
  await expect(page.getByTestId('deployment-card').first()).toBeVisible();
  await page.screenshot({ path: path.join(docs, 'service.png') });
  // The Metrics tab over six hours: payments' bad deploy marked where its error ratio jumps, its SLO burning.
  await page.setViewportSize({ width: 1280, height: 1100 });
  await page.goto('/services/payments?tab=metrics&env=prod&range=6h');
  await expect(page.getByTestId('slo').first()).toBeVisible();
  await expect(page.getByTestId('metric-chart')).toHaveCount(8);
  await expect(page.getByTestId('deploy-marker').first()).toBeVisible();
  await page.screenshot({ path: path.join(docs, 'metrics.png') });
  // catalog's newest run: lint and test side by side, the failed test, the finally group.
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto('/services/catalog?tab=pipelines');
  await page.getByTestId('run-link').first().click();
  await expect(page.getByTestId('dag')).toHaveAttribute('data-layout-ms', /\d/);
  await page.screenshot({ path: path.join(docs, 'pipelines.png') });
  // cart's Config tab in prod: the Release drifted on the cluster, the field named and the diff shown.
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto('/services/cart?tab=config&env=prod');
  await expect(page.getByTestId('drift-chip').first()).toBeVisible();
  await page.getByTestId('drift-chip').first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(docs, 'config.png') });
});
