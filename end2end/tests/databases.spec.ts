import { test, expect } from '@playwright/test';
import { signInAs, signInAsGuest } from './session';

// Databases against the sandbox's fixtures: payments, ledger, checkout and catalog each have a database in dev
// and prod. Payments' prod database is behind its code (0003 applied, 0004 shipped); catalog's dev database has
// a failed check after migrating ("validate stock_warehouse_id_fkey", with the database's own error text), and
// checkout's prod database a running and a pending one (sandbox::fixtures::platform::SCHEMA_CHECKS_AFTER_MIGRATING).
// catalog is shop's, so linus is an owner of it; ada (payments) and a guest are not.

const FIXTURES: [string, string][] = [
  ['catalog', 'dev'], ['catalog', 'prod'], ['checkout', 'dev'], ['checkout', 'prod'],
  ['ledger', 'dev'], ['ledger', 'prod'], ['payments', 'dev'], ['payments', 'prod'],
];

const row = (page: import('@playwright/test').Page, name: string, env: string) =>
  page.locator(`[data-testid="database-row"][data-database="${name}"][data-env="${env}"]`);

test('the Databases page lists every fixture database with its state, and filters by environment in the URL', async ({ page }) => {
  await signInAsGuest(page);
  await page.getByTestId('nav-databases').click();
  await expect(page).toHaveURL(/\/databases$/);
  for (const [name, env] of FIXTURES) {
    await expect(row(page, name, env)).toBeVisible({ timeout: 15_000 });
  }
  // A failed check is marked, in words.
  await expect(row(page, 'catalog', 'dev')).toHaveAttribute('data-failed', 'true');
  await expect(row(page, 'catalog', 'dev').getByTestId('database-check-failed')).toContainText('validate stock_warehouse_id_fkey');
  await expect(row(page, 'payments', 'dev')).toHaveAttribute('data-failed', 'false');
  // Applied against newest, behind said as such.
  await expect(row(page, 'payments', 'prod').getByTestId('database-versions')).toContainText(/0003 of 0004/);
  await expect(row(page, 'payments', 'prod').getByTestId('database-schema')).toContainText('Behind the code');
  await expect(row(page, 'payments', 'dev').getByTestId('database-schema')).toContainText('Up to date');
  await expect(row(page, 'payments', 'prod').getByTestId('database-available')).toContainText('Available');
  await expect(row(page, 'payments', 'prod')).toContainText('postgres');
  // Bound components link to their services.
  await expect(row(page, 'payments', 'prod').getByRole('link', { name: 'payments', exact: true }).last()).toHaveAttribute('href', '/services/payments');

  await page.locator('[data-testid="env-option"][data-env="prod"]').click();
  await expect(page).toHaveURL(/\/databases\?env=prod$/);
  await expect(row(page, 'catalog', 'prod')).toBeVisible();
  await expect(page.locator('[data-testid="database-row"][data-env="dev"]')).toHaveCount(0);
  await page.reload();
  await expect(page.locator('[data-testid="database-row"][data-env="dev"]')).toHaveCount(0);
  await expect(page.locator('[data-testid="env-option"][data-env="prod"]')).toHaveAttribute('aria-current', 'true');
});

test("a failed check shows the database's error to an owner of its service, and only that it failed to anyone else", async ({ page }) => {
  await signInAs(page, 'linus', '/databases/dev/catalog');
  const failed = page.locator('[data-testid="schema-check"][data-state="Failed"]');
  await expect(failed).toContainText('validate stock_warehouse_id_fkey', { timeout: 15_000 });
  await expect(failed.getByTestId('database-error')).toContainText('violates foreign key constraint "stock_warehouse_id_fkey"');
  await expect(failed.getByTestId('database-error-hidden')).toHaveCount(0);

  await page.context().clearCookies();
  await signInAsGuest(page, '/databases/dev/catalog');
  await expect(failed).toBeVisible({ timeout: 15_000 });
  await expect(failed.getByTestId('check-state')).toContainText('Failed');
  await expect(failed.getByTestId('database-error')).toHaveCount(0);
  await expect(failed.getByTestId('database-error-hidden')).toHaveText("Failed — the database's error text is shown to the owners of catalog.");
  await expect(page.locator('body')).not.toContainText('violates foreign key constraint');

  // An owner of another service is no owner of this one.
  await page.context().clearCookies();
  await signInAs(page, 'ada', '/databases/dev/catalog');
  await expect(failed.getByTestId('database-error-hidden')).toBeVisible({ timeout: 15_000 });
  await expect(failed.getByTestId('database-error')).toHaveCount(0);
});

test("a database page shows its versions, migrations, checks, history and bound services; the service's tab links to it", async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=databases');
  const link = page.locator('[data-testid="database-row"][data-database="payments"][data-env="prod"]').getByTestId('database-link');
  await expect(link).toHaveAttribute('href', '/databases/prod/payments', { timeout: 15_000 });
  await link.click();
  await expect(page).toHaveURL(/\/databases\/prod\/payments$/);
  const detail = page.getByTestId('database-detail');
  await expect(detail).toBeVisible({ timeout: 15_000 });
  await expect(detail.getByTestId('database-versions')).toContainText(/0003 of 0004/);
  await expect(detail.getByTestId('database-schema')).toContainText('Behind the code');
  await expect(detail.locator('[data-testid="migration"][data-applied="true"]')).not.toHaveCount(0);
  await expect(detail.locator('[data-testid="schema-check"][data-state="Succeeded"]').first()).toContainText('migrate 0001');
  await expect(detail.getByTestId('schema-change').first()).toBeVisible();
  await detail.getByTestId('database-service').filter({ hasText: 'payments' }).click();
  await expect(page).toHaveURL(/\/services\/payments$/);

  // Checks in every state read as words: checkout's prod database is backfilling with a check still pending.
  await page.goto('/databases/prod/checkout');
  await expect(page.locator('[data-testid="schema-check"][data-state="Running"]')).toContainText('backfill orders.shipping_address', { timeout: 15_000 });
  await expect(page.locator('[data-testid="schema-check"][data-state="Pending"]')).toContainText('validate orders_shipping_address_not_null');

  // A database that does not exist says so.
  await page.goto('/databases/prod/no-such-database');
  await expect(page.getByTestId('error')).toBeVisible({ timeout: 15_000 });
});
