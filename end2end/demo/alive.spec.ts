import { test, expect } from '@playwright/test';
import { signInAsGuest } from '../tests/session';

// The sandbox's planned history spans a little over a week (a commit a day per service) and ends minutes
// before it starts; nothing deployed can be older.
const PLANNED_SPAN_S = 8 * 86_400;
const UNITS: Record<string, number> = { s: 1, min: 60, h: 3_600, d: 86_400 };

/** Seconds in an age as the app writes it ("just now", "40 s ago", "3 h ago", "5 d ago"). */
function ageSeconds(text: string): number {
  const match = text.match(/(\d+) (s|min|h|d) ago/);
  return match ? Number(match[1]) * UNITS[match[2]] : 0;
}

test('within half a minute of opening the Overview something new happens, live', async ({ page }) => {
  const opened = Date.now();
  await signInAsGuest(page, '/');
  await page.evaluate(() => { (window as any).__noReload = true; });
  // An item stamped after the page opened can only have come from the live platform, not its history.
  const times = page.locator('[data-testid="activity-item"] time');
  await expect.poll(async () => {
    const stamps = await times.evaluateAll((els) => els.map((e) => e.getAttribute('datetime') ?? ''));
    return stamps.some((at) => Date.parse(at) >= opened - 1_000);
  }, { timeout: 30_000, intervals: [500] }).toBe(true);
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
});

test('no deployment card says it was deployed before the world began', async ({ page }) => {
  await signInAsGuest(page, '/');
  const listed: { name: string; catalog_state: string }[] = await (await page.request.get('/api/v1/services')).json();
  // A repository that is only in the catalog has nothing deployed, so no cards to read.
  const services = listed.filter((s) => s.catalog_state !== 'not_onboarded');
  expect(services.length).toBeGreaterThan(0);
  let seen = 0;
  for (const { name } of services) {
    await page.goto(`/services/${name}`);
    const cards = page.getByTestId('deployment-card');
    await expect(cards.first()).toBeVisible();
    for (const text of await cards.allInnerTexts()) {
      for (const deployed of text.matchAll(/deployed (just now|\d+ (?:s|min|h|d) ago)/g)) {
        seen += 1;
        expect(ageSeconds(deployed[1]), `${name}: ${deployed[0]}`).toBeLessThanOrEqual(PLANNED_SPAN_S);
      }
    }
  }
  expect(seen).toBeGreaterThan(0);
});
