// The accessibility check every page state goes through: axe-core's WCAG 2.0 and 2.1 A and AA rules in the
// real browser. One copy, so a spec for a new page calls `expectAccessible` and gets the same rules. Not a spec
// (Playwright runs only *.spec.ts).
import AxeBuilder from '@axe-core/playwright';
import { expect, type Page } from '@playwright/test';

/** The rule sets Tower promises: WCAG 2.0 and 2.1, levels A and AA. */
export const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/**
 * Runs axe on the page as it is now and fails with every violation spelled out: the rule, its impact, what
 * it asks for and the selector of each element at fault, so the failure says what to mend and where.
 */
export async function expectAccessible(page: Page, where: string) {
  const results = await new AxeBuilder({ page }).withTags(WCAG_TAGS).analyze();
  const violations = results.violations.map((violation) => {
    const elements = violation.nodes.map((node) => `  at ${node.target.join(' ')}: ${node.html.slice(0, 160)}`);
    return [`${violation.id} (${violation.impact}): ${violation.help}`, ...elements].join('\n');
  });
  expect(violations, `axe: WCAG A/AA violations on ${where}\n${violations.join('\n')}`).toEqual([]);
}

/**
 * Holds every request matching `url` until the returned function is called, so a test can look at the state
 * the page is in while it waits (skeletons).
 */
export async function hold(page: Page, url: string | RegExp): Promise<() => void> {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(url, async (route) => {
    await released;
    // The page may have moved on (or closed) while the request was held.
    await route.continue().catch(() => {});
  });
  return release;
}

/** Answers every request matching `url` with a 503, the way a Tower whose upstream is down answers. */
export async function failWith503(page: Page, url: string | RegExp) {
  await page.route(url, (route) => route.fulfill({ status: 503, contentType: 'text/plain', body: 'unavailable' }));
}
