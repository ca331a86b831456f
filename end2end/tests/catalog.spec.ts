import { test, expect } from '@playwright/test';
import { signInAs, signInAsGuest } from './session';

// The catalog against the sandbox: Tower reads every repository's catalog-info.yaml. `typeahead` (owned by shop)
// has one and no Component, so it is in the catalog but not on the platform (the sandbox's `acme/search` is an
// onboarded service, so `typeahead` plays that part: sandbox::world::CATALOG_ONLY); `ledger` has no file at all.
// linus is in shop, so he may onboard `typeahead`.

const notOnboarded = '[data-testid="not-onboarded"][data-service="typeahead"]';

test('a repository only the catalog knows is no matrix row, is listed apart, and Onboard prefills the form', async ({ page }) => {
  await signInAs(page, 'linus');
  // The catalog is scanned in the background: the section appears once it has been read.
  await expect(page.locator(notOnboarded)).toBeVisible({ timeout: 20_000 });
  await expect(page.locator(notOnboarded)).toContainText('shop');
  // It counts in nothing: the matrix, its cells and the fleet's numbers are those of the platform alone.
  await expect(page.getByTestId('service-row')).toHaveCount(8);
  await expect(page.getByTestId('matrix-cell')).toHaveCount(16);
  await expect(page.locator('[data-testid="service-row"][data-service="typeahead"]')).toHaveCount(0);
  await expect(page.getByTestId('fleet-counts')).toHaveText('8 services · 3 teams');
  // A status filter shows only what runs somewhere, so the section goes away with it.
  await page.goto('/?status=degraded');
  await expect(page.getByTestId('service-row').first()).toBeVisible();
  await expect(page.locator(notOnboarded)).toHaveCount(0);

  await page.goto('/');
  await page.locator(notOnboarded).getByTestId('onboard-button').click();
  await expect(page).toHaveURL(/\/create\?template=onboard-service&name=typeahead&owner=shop&description=/);
  await expect(page.getByTestId('template-form')).toBeVisible();
  await expect(page.getByTestId('field-name')).toHaveValue('typeahead');
  await expect(page.getByTestId('field-owner')).toHaveValue('shop');
  await expect(page.getByTestId('field-description')).toHaveValue('Finds products as you type');
  await expect(page.getByTestId('permission-reason')).toHaveCount(0);
});

test('its own page says it is in the catalog and not on the platform yet, with Onboard for its team only', async ({ page }) => {
  await signInAs(page, 'linus', '/services/typeahead');
  const notice = page.getByTestId('not-onboarded-notice');
  await expect(notice).toContainText('In the catalog, not on the platform yet', { timeout: 20_000 });
  await expect(notice.getByTestId('onboard-button')).toHaveAttribute('href', /template=onboard-service&name=typeahead&owner=shop/);
  await expect(page.getByTestId('catalog-lifecycle')).toHaveText('experimental');
  // No environments, so no tabs and no cards.
  await expect(page.getByTestId('tab-deployments')).toHaveCount(0);
  await expect(page.getByTestId('deployment-card')).toHaveCount(0);

  // ada is not in shop: the page says who may onboard it instead of offering a button that would be refused.
  await page.context().clearCookies();
  await signInAs(page, 'ada', '/services/typeahead');
  await expect(page.getByTestId('not-onboarded-notice')).toBeVisible({ timeout: 20_000 });
  await expect(page.getByTestId('onboard-button')).toHaveCount(0);
  await expect(page.getByTestId('permission-reason')).toBeVisible();
});

test("a service page shows its catalog: lifecycle, system, tags, links, on-call and annotations", async ({ page }) => {
  await signInAsGuest(page, '/services/payments');
  const catalog = page.getByTestId('catalog');
  await expect(catalog).toBeVisible({ timeout: 20_000 });
  await expect(catalog.getByTestId('catalog-lifecycle')).toHaveText('production');
  await expect(catalog.getByTestId('catalog-system')).toHaveText('payments');
  await expect(catalog.getByTestId('catalog-tag').filter({ hasText: 'postgres' })).toHaveCount(1);
  const runbook = catalog.getByTestId('catalog-link').filter({ hasText: 'Runbook' });
  await expect(runbook).toHaveAttribute('href', 'https://runbooks.acme.example/payments');
  await expect(runbook).toHaveAttribute('rel', 'noreferrer');
  await expect(catalog.getByTestId('catalog-link').filter({ hasText: 'Documentation' })).toHaveAttribute('href', 'https://docs.acme.example/services/payments');
  await expect(catalog.getByTestId('catalog-link').filter({ hasText: 'Dashboard' })).toHaveAttribute('href', /grafana\.acme\.example\/d\/payments/);
  await expect(catalog.getByTestId('catalog-on-call')).toContainText('P7Q2XK9');
  await expect(catalog.locator('[data-testid="catalog-annotation"][data-key="github.com/project-slug"]')).toContainText('acme/payments');
  await expect(page.getByTestId('catalog-missing')).toHaveCount(0);
});

test('ledger has no catalog-info.yaml: its page warns and says what to do', async ({ page }) => {
  await signInAsGuest(page, '/services/ledger');
  const missing = page.getByTestId('catalog-missing');
  await expect(missing).toContainText('acme/ledger has no catalog-info.yaml', { timeout: 20_000 });
  await expect(missing).toContainText("Add one at the repository's root");
  await expect(page.getByTestId('catalog')).toHaveCount(0);
  // It is on the platform all the same: its cards are there.
  await expect(page.getByTestId('deployment-card')).toHaveCount(2, { timeout: 15_000 });
});
