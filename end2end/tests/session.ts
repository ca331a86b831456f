// What every spec needs to get into Tower and find a card: one copy, so a change to the sign-in page or the
// card's markup is mended in one place. Not a spec (Playwright runs only *.spec.ts).
import { expect, type Cookie, type Page } from '@playwright/test';

export { sandboxUrl } from '../playwright.config';

/**
 * Session cookies of the identities this worker has signed in as. The sign-in flow itself is covered by
 * `sign-in.spec.ts`; every other test only needs to be signed in, and replaying the cookie skips two to four
 * page loads per test (the forge's OAuth page and its redirects), which is most of a short test's time.
 */
const signedIn = new Map<string, Cookie[]>();

/** Opens `path` with the saved session of `who`, if this worker has one; says whether it did. */
async function resume(page: Page, who: string, path: string): Promise<boolean> {
  const cookies = signedIn.get(who);
  if (!cookies) return false;
  await page.context().addCookies(cookies);
  await page.goto(path);
  return true;
}

/** Continues as guest from the sign-in page shown at `path`. */
export async function signInAsGuest(page: Page, path = '/') {
  if (!(await resume(page, 'guest', path))) {
    await page.goto(path);
    await page.getByTestId('continue-as-guest').click();
  }
  await expect(page.getByTestId('user-name')).toHaveText('Guest');
  signedIn.set('guest', await page.context().cookies());
}

/** Signs in through the sandbox forge's OAuth page, picking the demo identity `login`. */
export async function signInAs(page: Page, login: 'ada' | 'linus', path = '/') {
  if (!(await resume(page, login, path))) {
    await page.goto(path);
    await page.getByTestId('sign-in-github').click();
    await page.locator(`[data-testid="identity-${login}"]`).click();
  }
  await expect(page.getByTestId('user-menu')).not.toContainText('guest, read-only');
  await expect(page.getByTestId('user-name')).toBeVisible();
  signedIn.set(login, await page.context().cookies());
}

/** The service page's deployment card for `env`. */
export const card = (page: Page, env: string) =>
  page.locator(`[data-testid="deployment-card"][data-env="${env}"]`);

/**
 * Leaves the keyboard focus on the page itself, as a user does by clicking empty space. A click on `body`
 * lands on its centre, which on a loaded Overview is a row's version link, so it would navigate instead.
 */
export async function focusNothing(page: Page) {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
}
