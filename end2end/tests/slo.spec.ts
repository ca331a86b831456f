import { test, expect, type Page } from '@playwright/test';
import { signInAsGuest } from './session';

// Service level objectives against the sandbox's Pyrra objectives (`sandbox/src/fixtures/slo.rs`): payments'
// last prod deploy raised its 5xx share to 8 % about 3 h 41 min before the sandbox started, so its 99.5 %
// availability objective burns about 16 times too fast over every short window (the 1h/5m page fires) and its
// budget is overspent; recommendations has no objectives at all.

const FAST_BURN = 'payments-prod-availability';

const slo = (page: Page, name: string) => page.locator(`[data-testid="slo"][data-name="${name}"]`);

test('a guest sees payments burn its prod availability budget, with the three numbers and the page firing', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod');
  const panel = page.getByTestId('slo-panel');
  // Tower evaluates objectives in the background: right after it starts the panel may still be loading.
  await expect(slo(page, FAST_BURN)).toBeVisible({ timeout: 20_000 });
  const fast = slo(page, FAST_BURN);
  await expect(fast).toHaveAttribute('data-burning', 'true');
  await expect(fast.getByTestId('slo-burning')).toHaveText(/Burning/);
  // Least budget first: the burning objective leads the list.
  await expect(panel.getByTestId('slo').first()).toHaveAttribute('data-name', FAST_BURN);

  // The three numbers, up front.
  await expect(fast.getByTestId('slo-objective').locator('dd.figure')).toHaveText('99.5 %');
  await expect(fast.getByTestId('slo-availability').locator('dd.figure')).toHaveText(/^\d{1,3}(\.\d+)? %$/);
  await expect(fast.getByTestId('slo-budget').locator('dd.figure')).toHaveText(/^−\d+(\.\d)? %$/);
  await expect(fast.getByTestId('slo-budget')).toHaveAttribute('data-tone', 'tone-bad');
  await expect(fast.getByTestId('slo-budget')).toContainText('spent');

  // The four alerts; the fast page (1h and 5m over 14.4×) fires.
  const alerts = fast.getByTestId('burn-table').getByTestId('alert-row');
  await expect(alerts).toHaveCount(4);
  const page1h = fast.locator('[data-testid="alert-row"][data-long="1h"][data-short="5m"]');
  await expect(page1h).toHaveAttribute('data-firing', 'true');
  await expect(page1h).toContainText('Firing');
  await expect(page1h).toContainText('14.4×');
  await expect(page1h).toContainText('Page');
  await expect(page1h.locator('td').first()).toHaveText(/^\d+\.\d×$/);

  // The budget over the last day, the bad deploy marked on it.
  const chart = fast.locator('[role="img"]');
  await expect(chart).toHaveAttribute('aria-label', new RegExp(`^Error budget remaining of ${FAST_BURN}, last 24 hours, now −\\d`));
  await expect(fast.locator('path.series').first()).toHaveAttribute('d', /^M[\d.]+,[\d.]+.*L/);
  await expect(fast.getByTestId('deploy-marker').first()).toBeAttached({ timeout: 15_000 });
});

test('the Overview sorted by error budget left lists payments first and keeps the order in the URL', async ({ page }) => {
  await signInAsGuest(page, '/');
  await expect(page.getByTestId('fleet-table')).toBeVisible({ timeout: 15_000 });
  const payments = page.locator('[data-testid="slo-cell"][data-service="payments"]');
  await expect(payments).toBeVisible({ timeout: 20_000 });
  await expect(payments).toHaveAttribute('data-burning', 'true');
  await expect(payments.getByTestId('slo-burning')).toHaveText(/Burning/);
  await expect(payments.locator('a')).toHaveText(/^−\d+(\.\d)? %$/);
  await expect(payments.locator('a')).toHaveAttribute('href', '/services/payments?tab=metrics&env=prod');

  await page.getByTestId('sort-budget').click();
  await expect(page).toHaveURL(/[?&]sort=budget(&|$)/);
  await expect(page.getByTestId('sort-budget')).toHaveAttribute('aria-current', 'true');
  await expect(page.getByTestId('service-row').first()).toHaveAttribute('data-service', 'payments');
  // Services without objectives come last.
  await expect(page.getByTestId('service-row').last().getByTestId('slo-cell')).toHaveAttribute('data-budget', 'none');

  // The order survives a reload: the URL is the state.
  await page.reload();
  await expect(page.getByTestId('service-row').first()).toHaveAttribute('data-service', 'payments', { timeout: 15_000 });
});

test('a service without objectives says how to add one', async ({ page }) => {
  await signInAsGuest(page, '/');
  const withObjectives = new Set<string>(
    ((await (await page.request.get('/api/v1/slos')).json()) as { service: string }[]).map((s) => s.service),
  );
  const services = (await (await page.request.get('/api/v1/services')).json()) as {
    name: string;
    environments: { environment: string }[];
  }[];
  const without = services.find((s) => !withObjectives.has(s.name) && s.environments.length > 0);
  expect(without, 'the sandbox has a deployed service without objectives').toBeTruthy();
  const env = without!.environments[0].environment;
  await page.goto(`/services/${without!.name}?tab=metrics&env=${env}`);
  await expect(page.getByTestId('slo-empty')).toHaveText(
    `${without!.name} has no service level objectives in ${env}. Add a Pyrra ServiceLevelObjective labelled with the component and environment.`,
    { timeout: 20_000 },
  );
  await expect(page.getByTestId('slo')).toHaveCount(0);
  // The charts below still load.
  await expect(page.getByTestId('metric-chart')).toHaveCount(8, { timeout: 15_000 });
});
