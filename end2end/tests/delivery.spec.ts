import { test, expect, type Page } from '@playwright/test';
import { signInAs, card, sandboxUrl } from './session';

// Delivery against the sandbox: ada owns payments, ledger and refunds. Every write is a pull request on the
// sandbox forge, previewed first (files under platform/ and their diff), then linked.

async function previewAndSubmit(page: Page, preview = true): Promise<number> {
  if (preview) await page.getByTestId('preview-button').click();
  await expect(page.getByTestId('preview-file').first()).toHaveAttribute('data-path', /^platform\//);
  await expect(page.getByTestId('diff')).toContainText('+');
  await page.getByTestId('submit-button').click();
  const link = page.getByTestId('pr-link');
  await expect(link).toBeVisible({ timeout: 15_000 });
  return Number((await link.textContent())!.replace('#', ''));
}

test('promoting twice updates the same PR; rollback opens one; cards show them pending', async ({ page }) => {
  test.setTimeout(60_000);
  await signInAs(page, 'ada', '/services/payments');
  await card(page, 'dev').getByTestId('promote-button').click();
  const dialog = page.getByTestId('move-dialog');
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId('move-commits')).toBeVisible({ timeout: 15_000 });
  // Prod's database lacks 0004: the dialog offers the schema PR first.
  await expect(dialog.getByTestId('missing-migrations')).toContainText('0004');
  await expect(dialog.getByTestId('schema-first-button')).toHaveAttribute('href', /template=apply-schema.*version=0004/);
  await expect(dialog.getByTestId('preview-file')).toHaveAttribute('data-path', 'platform/environments/prod/payments-release.yaml');
  await expect(dialog.getByTestId('diff')).toContainText('version');
  await dialog.getByTestId('confirm-button').click();
  const first = (await dialog.getByTestId('pr-link').textContent())!;
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  await expect(card(page, 'prod').getByTestId('pending-pr').first()).toBeVisible({ timeout: 20_000 });
  await expect(card(page, 'prod').getByTestId('pending-pr').first()).toHaveAttribute('data-ci', /pending|success|failure|none/);

  await card(page, 'dev').getByTestId('promote-button').click();
  await dialog.getByTestId('confirm-button').click();
  await expect(dialog.getByTestId('pr-outcome')).toContainText(`updated the open PR ${first}`);
  await dialog.getByText('Cancel').click();

  await card(page, 'prod').getByTestId('rollback-button').click();
  await expect(dialog.getByTestId('preview-file')).toHaveAttribute('data-path', 'platform/environments/prod/payments-release.yaml', { timeout: 15_000 });
  await dialog.getByTestId('confirm-button').click();
  await expect(dialog.getByTestId('pr-link')).toBeVisible();
});

test('the schema-first action opens the apply-schema form prefilled', async ({ page }) => {
  await signInAs(page, 'ada', '/services/payments');
  await card(page, 'dev').getByTestId('promote-button').click();
  await page.getByTestId('schema-first-button').click();
  await expect(page).toHaveURL(/\/create\?template=apply-schema/);
  await expect(page.getByTestId('field-environment')).toHaveValue('prod');
  await expect(page.getByTestId('field-version')).toHaveValue('0004');
});

test('releases list records newest first with a detail and its diff', async ({ page }) => {
  await signInAs(page, 'ada', '/services/payments');
  await page.getByTestId('tab-releases').click();
  await expect(page).toHaveURL(/\/releases\?service=payments/);
  await page.getByTestId('nav-releases').click();
  await page.getByTestId('filter-service').selectOption('payments');
  await expect(page).toHaveURL(/service=payments&environment=prod/);
  const rows = page.getByTestId('release-row');
  await expect(rows.first()).toBeVisible({ timeout: 15_000 });
  const count = await rows.count();
  expect(count).toBeLessThanOrEqual(20);
  // Payments prod has only a few records in the default sandbox: one page, no next.
  await expect(page.getByTestId('next-page')).toHaveCount(0);

  await rows.first().locator('a').first().click();
  await expect(page).toHaveURL(/\/releases\/[0-9a-f]{7,40}$/);
  const detail = page.getByTestId('release-detail');
  await expect(detail).toBeVisible();
  await expect(detail.getByTestId('release-version')).toHaveText(/\w{7}/);
  await expect(detail.getByTestId('diff')).toContainText('payments-release.yaml');

  // Dev records offer Promote.
  await page.goto('/releases?service=payments&environment=dev');
  await rows.first().locator('a').first().click();
  await expect(page.getByTestId('release-detail').getByTestId('promote-button')).toBeVisible();
});

test('onboarding a service previews its files, opens a PR, and the merged service appears', async ({ page, request }) => {
  test.setTimeout(60_000);
  const name = `inventory-${Math.random().toString(36).slice(2, 7)}`;
  await signInAs(page, 'ada');
  await page.getByTestId('nav-create').click();
  await page.getByTestId('template-onboard-service').click();
  await expect(page).toHaveURL(/template=onboard-service/);

  // Invalid input is refused next to its field, without a request.
  await page.getByTestId('field-name').fill('A B');
  await page.getByTestId('preview-button').click();
  await expect(page.getByTestId('field-error-name')).toBeVisible();
  await expect(page.getByTestId('preview-files')).toHaveCount(0);

  await page.getByTestId('field-name').fill(name);
  await page.getByTestId('field-owner').selectOption('payments');
  await page.getByTestId('field-description').fill('Counts what is on the shelves');
  await expect(page.getByTestId('field-error-name')).toHaveCount(0);
  await page.getByTestId('preview-button').click();
  await expect(page.locator(`[data-testid="preview-file"][data-path="platform/registry/${name}.yaml"]`)).toBeVisible();
  await expect(page.locator(`[data-testid="preview-file"][data-path="platform/environments/dev/${name}-release.yaml"]`)).toBeVisible();
  const number = await previewAndSubmit(page, false);

  await page.getByTestId('nav-prs').click();
  await expect(page.locator(`[data-testid="pr-row"][data-number="${number}"]`)).toBeVisible();
  await expect(page.locator(`[data-testid="pr-row"][data-number="${number}"]`).getByTestId('pr-checks')).toBeVisible();

  const merged = await request.post(`${sandboxUrl}/sandbox/pulls/${number}/merge`);
  expect(merged.ok()).toBeTruthy();
  await page.goto('/');
  await expect(page.locator(`[data-testid="service-row"][data-service="${name}"]`)).toBeVisible({ timeout: 25_000 });

  // Leave the fleet as the other spec files expect it: remove what the merge applied (the simulator applies
  // only the files a commit changes, so nothing brings them back).
  const platform = `${sandboxUrl}/clusters/management/apis/platform.tower.dev/v1alpha1/namespaces/platform`;
  expect((await request.delete(`${platform}/releases/${name}-dev`)).ok()).toBeTruthy();
  expect((await request.delete(`${platform}/components/${name}`)).ok()).toBeTruthy();
  await expect(page.locator(`[data-testid="service-row"][data-service="${name}"]`)).toHaveCount(0, { timeout: 5_000 });
});

test('create deployment, add database and apply schema each preview and open a PR', async ({ page }) => {
  test.setTimeout(90_000);
  await signInAs(page, 'ada', '/create?template=create-deployment&service=payments');
  await expect(page.getByTestId('field-service')).toHaveValue('payments');
  await page.getByTestId('field-environment').selectOption('dev');
  // The build list holds only green builds; pick one that is not the running one.
  const builds = page.getByTestId('field-build').locator('option');
  await expect(builds.nth(2)).toBeAttached({ timeout: 15_000 });
  await page.getByTestId('field-build').selectOption({ index: 2 });
  await previewAndSubmit(page);

  await page.getByTestId('template-add-database').click();
  await expect(page).toHaveURL(/template=add-database&service=payments/);
  await page.getByTestId('field-name').fill(`cache-${Math.random().toString(36).slice(2, 6)}`);
  await page.getByTestId('field-size').selectOption('medium');
  await previewAndSubmit(page);

  await page.goto('/create?template=apply-schema&service=payments&environment=prod');
  await expect(page.getByTestId('field-version')).toHaveValue('0004', { timeout: 15_000 });
  await expect(page.getByTestId('schema-migrations')).toContainText('0004');
  await previewAndSubmit(page);
  await expect(page.getByTestId('preview-file')).toHaveAttribute('data-path', 'platform/environments/prod/payments-schema.yaml');

  await page.getByTestId('nav-prs').click();
  await expect(page.getByTestId('pr-row')).not.toHaveCount(0);
});
