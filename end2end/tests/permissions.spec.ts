import { test, expect, type Page } from '@playwright/test';
import { signInAsGuest, signInAs, card } from './session';

// "A guest sees no Promote, Rollback, Sync, template or log controls, and a direct POST as a guest gets 403
// with a JSON error; an owner sees them only on their own team's services." ada is in payments, not shop.

const CONTROLS = ['promote-button', 'rollback-button', 'sync-button', 'force-sync-button', 'logs-button'];

async function expectNoControls(page: Page, team: string) {
  await expect(page.getByTestId('deployment-card')).toHaveCount(2);
  for (const control of CONTROLS) {
    await expect(page.getByTestId(control)).toHaveCount(0);
  }
  // Each card says why, and who can.
  for (const env of ['dev', 'prod']) {
    await expect(card(page, env).getByTestId('permission-reason').first()).toContainText(`Owners of ${team}`);
  }
  await expect(card(page, 'dev').getByTestId('permission-reason').filter({ hasText: 'promote' })).toHaveCount(1);
  await expect(card(page, 'prod').getByTestId('permission-reason').filter({ hasText: 'roll back' })).toHaveCount(1);
}

async function expectNoForm(page: Page) {
  await expect(page.getByTestId('permission-reason')).toBeVisible();
  await expect(page.getByTestId('template-form')).toHaveCount(0);
  await expect(page.getByTestId('preview-button')).toHaveCount(0);
  await expect(page.getByTestId('submit-button')).toHaveCount(0);
}

test('a guest sees no write controls, only the reasons, and a direct POST is refused with 403 JSON', async ({ page }) => {
  await signInAsGuest(page, '/services/payments');
  await expectNoControls(page, 'payments');

  for (const template of ['onboard-service', 'create-deployment', 'add-database', 'apply-schema']) {
    await page.goto(`/create?template=${template}&service=payments`);
    await expect(page.getByTestId(`template-${template}`)).toBeVisible();
    await expectNoForm(page);
  }

  // The page's own cookies: the guest session.
  const response = await page.request.post('/api/v1/services/payments/promote', { headers: { 'x-tower-csrf': '1' } });
  expect(response.status()).toBe(403);
  expect(response.headers()['content-type']).toContain('application/json');
  const body = await response.json();
  expect(body.code).toBe('forbidden');
  expect(body.message).toBeTruthy();

  for (const path of ['/api/v1/services/payments/rollback', '/api/v1/services/payments/templates/add-database/submit', '/api/v1/templates/onboard-service/submit']) {
    const refused = await page.request.post(path, { headers: { 'x-tower-csrf': '1' }, data: {} });
    expect(refused.status(), path).toBe(403);
    expect((await refused.json()).code).toBe('forbidden');
  }
});

test('an owner sees every control on their own team\'s services and none on another team\'s', async ({ page }) => {
  await signInAs(page, 'ada', '/services/payments');
  await expect(page.getByTestId('deployment-card')).toHaveCount(2);
  await expect(card(page, 'dev').getByTestId('promote-button')).toBeVisible();
  await expect(card(page, 'prod').getByTestId('rollback-button')).toBeVisible();
  for (const env of ['dev', 'prod']) {
    for (const control of ['sync-button', 'force-sync-button', 'logs-button']) {
      await expect(card(page, env).getByTestId(control)).toBeVisible();
    }
    await expect(card(page, env).getByTestId('permission-reason')).toHaveCount(0);
  }
  // The promote dialog is a modal that Escape closes.
  await card(page, 'dev').getByTestId('promote-button').click();
  await expect(page.getByTestId('move-dialog')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('move-dialog')).toHaveCount(0);

  for (const template of ['create-deployment', 'add-database', 'apply-schema']) {
    await page.goto(`/create?template=${template}&service=payments`);
    await expect(page.getByTestId('template-form')).toBeVisible();
    await expect(page.getByTestId('preview-button')).toBeVisible();
    await expect(page.getByTestId('permission-reason')).toHaveCount(0);
  }
  await page.goto('/create?template=onboard-service');
  await expect(page.getByTestId('template-form')).toBeVisible();

  await page.goto('/services/checkout');
  await expectNoControls(page, 'shop');
  for (const template of ['create-deployment', 'add-database', 'apply-schema']) {
    await page.goto(`/create?template=${template}&service=checkout`);
    await expectNoForm(page);
    await expect(page.getByTestId('permission-reason')).toContainText('Owners of shop');
  }

  const refused = await page.request.post('/api/v1/services/checkout/promote', { headers: { 'x-tower-csrf': '1' } });
  expect(refused.status()).toBe(403);
  expect((await refused.json()).code).toBe('forbidden');
});
