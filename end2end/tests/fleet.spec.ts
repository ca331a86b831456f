import { test, expect, type Page } from '@playwright/test';
import { signInAsGuest, signInAs, card, focusNothing } from './session';

// The Fleet area against the sandbox's fixtures: catalog-prod is OutOfSync; recommendations dev is Degraded
// with a crash-looping pod and its BackOff warnings; ledger runs a worker Deployment; checkout prod has a
// stale ExternalSecret; catalog dev has a Crossplane composition error (each database claim composes an RDS
// Instance and a SubnetGroup); payments prod's database is behind the code (applied 0003, code 0004).

const cell = (page: Page, service: string, env: string) =>
  page.locator(`[data-testid="matrix-cell"][data-service="${service}"][data-env="${env}"]`);
test('the overview shows every service in every environment with the sandbox statuses', async ({ page }) => {
  await signInAsGuest(page);
  await expect(page.getByTestId('service-row')).toHaveCount(8);
  await expect(page.getByTestId('matrix-cell')).toHaveCount(16);

  await expect(cell(page, 'catalog', 'prod').getByTestId('chip-sync')).toHaveText(/OutOfSync/);
  await expect(cell(page, 'recommendations', 'dev').getByTestId('chip-health')).toHaveText(/Degraded/);
  await expect(cell(page, 'payments', 'prod').getByTestId('chip-sync')).toHaveText(/Synced/);
  // Every cell names its version; statuses carry a word, not only a colour.
  await expect(cell(page, 'payments', 'dev').getByTestId('cell-version')).toHaveText(/\w{7}/);

  // Fleet counts, each a link to its filter.
  await expect(page.getByTestId('count-degraded')).toContainText(/[1-9]/);
  await expect(page.getByTestId('count-out-of-sync')).toContainText(/[1-9]/);

  // The activity feed starts with the deploys Argo CD remembers rather than empty.
  await expect(page.locator('[data-testid="activity-item"][data-kind="deploy"]').first()).toBeVisible();
});

test('filters and search live in the URL and survive a reload', async ({ page }) => {
  await signInAsGuest(page);
  await page.getByTestId('filter-team').selectOption('shop');
  await expect(page).toHaveURL(/\/\?team=shop$/);
  await expect(page.getByTestId('service-row')).toHaveCount(3);

  await page.getByTestId('filter-status').selectOption('out-of-sync');
  await expect(page).toHaveURL(/team=shop&status=out-of-sync$/);
  await expect(page.getByTestId('service-row')).toHaveCount(1);
  await expect(page.locator('[data-testid="service-row"][data-service="catalog"]')).toBeVisible();

  await page.reload();
  await expect(page.getByTestId('service-row')).toHaveCount(1);
  await expect(page.getByTestId('filter-team')).toHaveValue('shop');
  await expect(page.getByTestId('filter-status')).toHaveValue('out-of-sync');

  // One environment shows only its column.
  await page.goto('/?env=prod&status=degraded');
  await expect(page.locator('[data-testid="matrix-cell"][data-env="dev"]')).toHaveCount(0);
  await page.goto('/?status=degraded');
  await expect(page.locator('[data-testid="service-row"][data-service="recommendations"]')).toBeVisible();

  // Search joins the other filters, and `/` focuses it.
  await page.goto('/?team=payments');
  // The Overview listens for `/` once it has mounted: wait for its rows before pressing it.
  await expect(page.getByTestId('service-row').first()).toBeVisible();
  await focusNothing(page);
  await page.keyboard.press('/');
  await expect(page.getByTestId('search')).toBeFocused();
  await page.keyboard.type('ledger');
  await expect(page).toHaveURL(/\?q=ledger&team=payments$/);
  await expect(page.getByTestId('service-row')).toHaveCount(1);
  await page.getByTestId('clear-filters').click();
  await expect(page.getByTestId('service-row')).toHaveCount(8);
});

test('a service page shows one card per environment with what the fixtures got wrong', async ({ page }) => {
  await signInAsGuest(page, '/services/payments');
  await expect(page.getByTestId('deployment-card')).toHaveCount(2);
  await expect(card(page, 'prod').getByTestId('card-version')).toHaveText(/\w{7}/);
  await expect(card(page, 'prod').getByTestId('schema-warning')).toContainText('0003');
  await expect(card(page, 'prod').getByTestId('schema-warning')).toContainText('0004');
  await expect(card(page, 'dev').getByTestId('schema-warning')).toHaveCount(0);
  await expect(card(page, 'prod').getByTestId('rollout-step').first()).toHaveAttribute('data-state', /done|current|pending/);
  await expect(card(page, 'dev').getByTestId('auto-deploy')).toBeVisible();
  await expect(card(page, 'prod').getByTestId('chip-health')).toBeVisible();

  await page.goto('/services/recommendations');
  await expect(card(page, 'dev').getByTestId('chip-health')).toHaveText(/Degraded/);
  await expect(card(page, 'dev').getByTestId('crashloop').first()).toBeVisible();
  const crashing = card(page, 'dev').getByTestId('pod-row').filter({ has: page.getByTestId('crashloop') }).first();
  expect(Number(await crashing.getAttribute('data-restarts'))).toBeGreaterThan(0);
  // The kubelet's back-off warnings, naming the pod; a healthy environment has no Events section.
  const backOff = card(page, 'dev').getByTestId('events').locator('[data-testid="event"][data-reason="BackOff"]').first();
  await expect(backOff).toContainText('BackOff');
  await expect(backOff).toContainText(String(await crashing.getAttribute('data-pod')));
  await expect(card(page, 'prod').getByTestId('events')).toHaveCount(0);

  // The ledger's worker is a plain Deployment beside its Rollout, folded while it is fine.
  await page.goto('/services/ledger');
  await expect(card(page, 'dev').getByTestId('workloads')).toContainText('1 deployment ready');

  await page.goto('/services/checkout');
  await expect(card(page, 'prod').getByTestId('secret-stale')).toBeVisible();
  await expect(card(page, 'dev').getByTestId('secret-stale')).toHaveCount(0);

  await page.goto('/services/catalog');
  await expect(card(page, 'dev').getByTestId('composition-error')).toBeVisible();
  await expect(card(page, 'prod').getByTestId('chip-sync')).toHaveText(/OutOfSync/);
  // The failing claim shows what it composed before, still running; those are fine, so no message.
  const composedUnderError = card(page, 'dev').getByTestId('cloud-resources').getByTestId('composed-resource');
  await expect(composedUnderError).toHaveCount(2);
  await expect(composedUnderError.getByTestId('composed-message')).toHaveCount(0);

  // A fine claim folds, with what it composed inside: an RDS Instance and its SubnetGroup, Ready and Synced.
  await page.goto('/services/payments');
  const resources = card(page, 'prod').getByTestId('cloud-resources');
  await expect(resources.locator('details.folded summary')).toHaveText(/1 resource ready and synced/);
  await resources.locator('details.folded summary').click();
  for (const kind of ['Instance', 'SubnetGroup']) {
    const composed = resources.locator(`[data-testid="composed-resource"][data-kind="${kind}"]`);
    await expect(composed).toBeVisible();
    await expect(composed.getByTestId('composed-ready')).toHaveAttribute('data-value', 'Ready');
    await expect(composed.getByTestId('composed-synced')).toHaveAttribute('data-value', 'Synced');
  }
});

test('the environment picker and the tabs live in the URL', async ({ page }) => {
  await signInAsGuest(page, '/services/checkout?env=prod');
  await expect(page.getByTestId('deployment-card')).toHaveCount(1);
  await expect(card(page, 'prod')).toBeVisible();

  await page.getByTestId('tab-dependencies').click();
  await expect(page).toHaveURL(/\/services\/checkout\?tab=dependencies&env=prod$/);
  for (const name of ['checkout', 'cart', 'payments', 'catalog']) {
    await expect(page.locator(`[data-testid="dependency-node"][data-service="${name}"]`)).toBeVisible();
  }

  await page.goto('/services/payments?tab=databases');
  await expect(page.getByTestId('database-row').first()).toBeVisible();
  await expect(page.locator('[data-testid="database-row"][data-env="prod"]')).toContainText('0003');
  await page.reload();
  await expect(page.getByTestId('database-row').first()).toBeVisible();
});

test('a guest sees no Sync or Logs controls, but why not', async ({ page }) => {
  await signInAsGuest(page, '/services/payments');
  await expect(page.getByTestId('deployment-card')).toHaveCount(2);
  await expect(page.getByTestId('sync-button')).toHaveCount(0);
  await expect(page.getByTestId('force-sync-button')).toHaveCount(0);
  await expect(page.getByTestId('logs-button')).toHaveCount(0);
  await expect(card(page, 'prod').getByTestId('permission-reason').filter({ hasText: 'sync' }).first()).toContainText('Owners of payments can sync');
});

test('an owner may sync and read logs of their own service only', async ({ page }) => {
  await signInAs(page, 'ada', '/services/payments');
  await expect(page.getByTestId('deployment-card')).toHaveCount(2);
  await expect(card(page, 'prod').getByTestId('sync-button')).toBeVisible();
  await expect(card(page, 'prod').getByTestId('force-sync-button')).toBeVisible();
  await expect(card(page, 'prod').getByTestId('permission-reason')).toHaveCount(0);

  // The log panel streams the pod's log; Escape closes it.
  await card(page, 'dev').getByTestId('logs-button').click();
  await expect(page.getByTestId('log-panel')).toBeVisible();
  await expect(page.getByTestId('log-line').first()).toBeVisible({ timeout: 10_000 });
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('log-panel')).toHaveCount(0);

  await page.goto('/services/checkout');
  await expect(page.getByTestId('deployment-card')).toHaveCount(2);
  await expect(page.getByTestId('sync-button')).toHaveCount(0);
  await expect(page.getByTestId('logs-button')).toHaveCount(0);
  await expect(card(page, 'prod').getByTestId('permission-reason').filter({ hasText: 'sync' }).first()).toContainText('Owners of shop can sync.');
});

test('Sync asks Argo CD and says what happened', async ({ page }) => {
  await signInAs(page, 'ada', '/services/payments?env=dev');
  await card(page, 'dev').getByTestId('sync-button').click();
  await expect(page.getByTestId('sync-result').or(page.getByTestId('sync-error'))).toBeVisible();
  await expect(page.getByTestId('sync-result')).toContainText('payments');
});
