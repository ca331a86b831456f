// Prod on two clusters, each deployed by its own Argo CD (`--prod-clusters 2`): the payments prod card shows
// prod-eu and prod-us; when prod-us stops answering, the card shows prod-eu live and prod-us unreachable
// since when, the Overview's cell says which cluster is lost, and both come back by themselves.
//
// This fleet needs its own Tower and sandbox, started here beside the suite's (ports offset from its own).
import { test, expect } from '@playwright/test';
import { expectAccessible } from './axe';
import { asGuestOn, ownTower } from './own-tower';

const { base, sandboxAt } = ownTower(7, ['--speed', '10', '--prod-clusters', '2'], 80_000);

/** Tells the sandbox to stop (or restart) answering for `cluster`, as a cluster that goes down does. */
async function setReachable(cluster: string, reachable: boolean) {
  const response = await fetch(`${sandboxAt}/sandbox/clusters/${cluster}/reachable`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reachable }),
  });
  expect(response.status).toBe(200);
}

test('with prod-us stopped, the payments prod card shows prod-eu live and prod-us unreachable', async ({ page }) => {
  test.setTimeout(120_000);
  await asGuestOn(page, base, '/services/payments');
  const prod = page.locator('[data-testid="deployment-card"][data-env="prod"]');
  const row = (cluster: string) => prod.locator(`[data-testid="card-cluster"][data-cluster="${cluster}"]`);
  await expect(row('prod-eu')).toHaveAttribute('data-state', 'live');
  await expect(row('prod-us')).toHaveAttribute('data-state', 'live');
  await expect(row('prod-us').getByTestId('cluster-version')).toHaveText(/^[0-9a-f]{7}$/);
  // Dev runs on one cluster: its card has no cluster table.
  await expect(page.locator('[data-testid="deployment-card"][data-env="dev"] [data-testid="card-clusters"]')).toHaveCount(0);

  await setReachable('prod-us', false);
  try {
    await expect(row('prod-us')).toHaveAttribute('data-state', 'unreachable', { timeout: 20_000 });
    await expect(row('prod-us').getByTestId('cluster-state')).toContainText(/unreachable since \d\d:\d\d/);
    await expect(row('prod-eu')).toHaveAttribute('data-state', 'live');
    await expect(prod.getByTestId('unreachable')).toContainText('prod-us of prod unreachable since');
    await expect(prod.getByTestId('unreachable')).toContainText('the other clusters are live');
    // The card as a whole is live: only prod-us's part of it is its last known state.
    await expect(prod).not.toHaveClass(/card-stale/);
    await expectAccessible(page, 'a service page with prod on two clusters, one unreachable');

    // The Overview shows the worst of the two, and names the cluster lost.
    await page.getByRole('link', { name: 'Overview' }).first().click();
    const cell = page.locator('[data-testid="matrix-cell"][data-service="payments"][data-env="prod"]');
    await expect(cell.getByTestId('unreachable')).toContainText('prod-us unreachable since');
  } finally {
    await setReachable('prod-us', true);
  }
  // Back by itself, without restarting Tower.
  await page.goto(`${base}/services/payments`);
  await expect(row('prod-us')).toHaveAttribute('data-state', 'live', { timeout: 45_000 });
});
