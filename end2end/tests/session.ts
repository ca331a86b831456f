// What every spec needs to get into Tower and find a card: one copy, so a change to the sign-in page or the
// card's markup is mended in one place. Not a spec (Playwright runs only *.spec.ts).
import { expect, type Page } from '@playwright/test';

export { sandboxUrl } from '../playwright.config';

/** Continues as guest from the sign-in page shown at `path`. */
export async function signInAsGuest(page: Page, path = '/') {
  await page.goto(path);
  await page.getByTestId('continue-as-guest').click();
  await expect(page.getByTestId('user-name')).toHaveText('Guest');
}

/** Signs in through the sandbox forge's OAuth page, picking the demo identity `login`. */
export async function signInAs(page: Page, login: 'ada' | 'linus', path = '/') {
  await page.goto(path);
  await page.getByTestId('sign-in-github').click();
  await page.locator(`[data-testid="identity-${login}"]`).click();
  await expect(page.getByTestId('user-menu')).not.toContainText('guest, read-only');
  await expect(page.getByTestId('user-name')).toBeVisible();
}

/** The service page's deployment card for `env`. */
export const card = (page: Page, env: string) =>
  page.locator(`[data-testid="deployment-card"][data-env="${env}"]`);
