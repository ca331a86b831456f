import { test, expect, type Locator, type Page } from '@playwright/test';
import { signInAs } from './session';

// Every action reachable with the keyboard alone, the focus visible at every stop: after signing in, these
// tests press keys only (no clicks). ada owns payments, so its cards offer Promote, Rollback, Sync and Logs.

/** The focused element, and whether it draws a focus indicator (an outline or a box shadow). */
async function focus(page: Page) {
  return page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null;
    if (!element || element === document.body) return { what: 'the page body', ring: false };
    const style = getComputedStyle(element);
    const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
    const what = `${element.tagName.toLowerCase()}[data-testid=${element.dataset.testid ?? ''}] "${(element.textContent ?? '').trim().slice(0, 40)}"`;
    return { what, ring: outline || style.boxShadow !== 'none' };
  });
}

async function expectFocusVisible(page: Page) {
  const now = await focus(page);
  expect(now.ring, `no visible focus indicator on ${now.what}`).toBe(true);
}

async function expectFocused(page: Page, target: Locator) {
  await expect(target).toBeFocused();
  await expectFocusVisible(page);
}

/**
 * Presses Tab (or Shift+Tab) until `target` has the focus, checking at every stop on the way that the focused
 * element shows where the focus is.
 */
async function tabTo(page: Page, target: Locator, { back = false, max = 80 } = {}) {
  for (let presses = 0; presses < max; presses++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const now = await focus(page);
    if (now.what !== 'the page body') expect(now.ring, `no visible focus indicator on ${now.what}`).toBe(true);
    if (await target.evaluate((element) => element === document.activeElement)) return;
  }
  throw new Error(`${max} presses of ${back ? 'Shift+Tab' : 'Tab'} did not reach ${target}`);
}

/** Tab and Shift+Tab, many times round, never leave the dialog. */
async function expectFocusTrapped(page: Page, dialog: Locator) {
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let presses = 0; presses < 12; presses++) {
      await page.keyboard.press(key);
      const inside = await dialog.evaluate((d) => d.contains(document.activeElement) && document.activeElement !== d);
      expect(inside, `${key} #${presses + 1} left the dialog for ${(await focus(page)).what}`).toBe(true);
      await expectFocusVisible(page);
    }
  }
}

/** Signed in as ada (an owner of payments), on payments' card for `env` alone. */
async function ownerOn(page: Page, env: 'dev' | 'prod') {
  await signInAs(page, 'ada', `/services/payments?env=${env}`);
  await expect(page.getByTestId('deployment-card')).toHaveCount(1, { timeout: 15_000 });
}

const serviceLink = (page: Page, service: string) =>
  page.locator(`[data-testid="service-row"][data-service="${service}"] th a`);
const envOption = (page: Page, env: string) => page.locator(`[data-testid="env-option"][data-env="${env}"]`);

test('from the Overview to Promote with the keyboard: search, open, environment, tab, dialog', async ({ page }) => {
  test.setTimeout(60_000);
  await signInAs(page, 'ada');
  await expect(page.getByTestId('fleet-table')).toBeVisible();

  // `/` finds the search box; typing filters.
  await page.keyboard.press('/');
  await expectFocused(page, page.getByTestId('search'));
  await page.keyboard.type('payments');
  await expect(page).toHaveURL(/q=payments/);
  await tabTo(page, serviceLink(page, 'payments'));
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/services\/payments$/);
  await expect(page.getByTestId('deployment-card')).toHaveCount(2, { timeout: 15_000 });

  // An environment, and the focus stays on the link just chosen.
  await tabTo(page, envOption(page, 'dev'));
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/services\/payments\?env=dev$/);
  await expect(page.getByTestId('deployment-card')).toHaveCount(1);
  await expectFocused(page, envOption(page, 'dev'));
  await expect(envOption(page, 'dev')).toHaveAttribute('aria-current', 'true');

  // A tab; the graph's list of edges opens from the keyboard too.
  await tabTo(page, page.getByTestId('tab-dependencies'), { back: true });
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/tab=dependencies&env=dev$/);
  await expectFocused(page, page.getByTestId('tab-dependencies'));
  await expect(page.getByTestId('tab-dependencies')).toHaveAttribute('aria-current', 'page');
  await tabTo(page, page.locator('.graph-text summary'));
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('dependency-edges')).toBeVisible();
  await expect(page.getByTestId('dependency-edges')).toContainText('calls payments');

  // Back to the deployments, and Promote.
  await tabTo(page, page.getByTestId('tab-deployments'), { back: true });
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/services\/payments\?env=dev$/);
  const promote = page.getByTestId('promote-button');
  await tabTo(page, promote);
  await page.keyboard.press('Enter');
  const dialog = page.getByTestId('move-dialog');
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId('confirm-button')).toBeEnabled({ timeout: 15_000 });
  const inside = await dialog.evaluate((d) => d.contains(document.activeElement));
  expect(inside, 'opening the dialog moves the focus into it').toBe(true);
  await expectFocusVisible(page);
  await expectFocusTrapped(page, dialog);

  // Escape closes it and gives the focus back to Promote.
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  await expectFocused(page, promote);
});

test('Rollback opens and its Cancel closes it from the keyboard, focus back on Rollback', async ({ page }) => {
  await ownerOn(page, 'prod');
  const rollback = page.getByTestId('rollback-button');
  await tabTo(page, rollback);
  await page.keyboard.press('Enter');
  const dialog = page.getByTestId('move-dialog');
  await expect(dialog.getByTestId('confirm-button')).toBeEnabled({ timeout: 15_000 });
  await tabTo(page, dialog.getByTestId('dialog-cancel'));
  await page.keyboard.press('Enter');
  await expect(dialog).toHaveCount(0);
  await expectFocused(page, rollback);

  // The close button too.
  await page.keyboard.press('Enter');
  await expect(dialog).toBeVisible();
  await tabTo(page, dialog.getByTestId('dialog-close'));
  await page.keyboard.press('Enter');
  await expect(dialog).toHaveCount(0);
  await expectFocused(page, rollback);
});

test('force sync asks to confirm with the focus on the confirmation, and Cancel brings it back', async ({ page }) => {
  await ownerOn(page, 'dev');
  const force = page.getByTestId('force-sync-button');
  await tabTo(page, force);
  await page.keyboard.press('Enter');
  await expectFocused(page, page.getByTestId('force-sync-confirm'));
  await page.keyboard.press('Tab');
  await expectFocused(page, page.getByTestId('force-sync-cancel'));
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('force-sync-confirm')).toHaveCount(0);
  await expectFocused(page, force);

  // Sync itself, by Space.
  await tabTo(page, page.getByTestId('sync-button'), { back: true });
  await page.keyboard.press('Space');
  await expect(page.getByTestId('sync-result')).toBeVisible({ timeout: 15_000 });
});

test('the log panel works from the keyboard: controls, scrollable lines, Escape back to Logs', async ({ page }) => {
  await ownerOn(page, 'dev');
  const logs = page.getByTestId('logs-button');
  await tabTo(page, logs);
  await page.keyboard.press('Enter');
  const panel = page.getByTestId('log-panel');
  await expect(panel).toBeVisible();
  await expectFocused(page, panel.getByTestId('log-close'));
  await expect(panel.getByTestId('log-line').first()).toBeVisible({ timeout: 15_000 });

  await tabTo(page, panel.getByTestId('log-pod'));
  await tabTo(page, panel.getByTestId('log-follow'));
  await page.keyboard.press('Space');
  await expect(panel.getByTestId('log-follow')).not.toBeChecked();
  await expect(panel.getByTestId('log-status')).not.toContainText('Following');
  // The lines take the focus, so arrow keys and Page Up/Down scroll them.
  await tabTo(page, panel.getByRole('region', { name: 'Log lines' }));

  await page.keyboard.press('Escape');
  await expect(panel).toHaveCount(0);
  await expectFocused(page, logs);
});

test('a golden path from the keyboard: pick it, fill it, Enter previews the files', async ({ page }) => {
  await signInAs(page, 'ada', '/create');
  await tabTo(page, page.getByTestId('template-onboard-service'));
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/template=onboard-service/);
  await expectFocused(page, page.getByTestId('template-onboard-service'));
  await tabTo(page, page.getByTestId('field-name'));
  await page.keyboard.type('shelves');
  await tabTo(page, page.getByTestId('field-owner'));
  await page.keyboard.type('payments');
  await expect(page.getByTestId('field-owner')).toHaveValue('payments');
  await tabTo(page, page.getByTestId('field-description'));
  await page.keyboard.type('Counts what is on the shelves');
  await page.keyboard.press('Enter');
  await expect(page.locator('[data-testid="preview-file"][data-path="platform/registry/shelves.yaml"]')).toBeVisible({ timeout: 15_000 });
  await tabTo(page, page.getByTestId('submit-button'));
});
