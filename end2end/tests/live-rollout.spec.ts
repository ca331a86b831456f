import { test, expect } from '@playwright/test';
import { signInAs, sandboxUrl } from './session';

// A merged prod Release change shows on the open page as it happens: Progressing, each canary step, Healthy
// on the new version — all without a reload.
test('after a merge the prod card walks through the rollout live', async ({ page, request }) => {
  test.setTimeout(120_000);
  await signInAs(page, 'ada', '/services/ledger?env=prod');
  const prodCard = page.locator('[data-testid="deployment-card"][data-env="prod"]');
  await expect(prodCard.getByTestId('chip-health')).toContainText('Healthy');

  const detail = await (await page.request.get('/api/v1/services/ledger')).json();
  const dev = detail.cards.find((c: any) => c.environment === 'dev');
  const prod = detail.cards.find((c: any) => c.environment === 'prod');
  expect(dev.running_version).not.toEqual(prod.running_version);

  // Record what the card shows, from inside the page, every time it changes.
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as any).__seen = seen;
    (window as any).__noReload = true;
    const card = () => document.querySelector('[data-testid="deployment-card"][data-env="prod"]');
    const record = () => {
      const el = card();
      if (!el) return;
      const health = el.querySelector('[data-testid="chip-health"]')?.textContent?.trim() ?? '';
      const steps = Array.from(el.querySelectorAll('[data-testid="rollout-step"]'));
      const current = steps.findIndex((s) => s.getAttribute('data-state') === 'current');
      const version = el.querySelector('[data-testid="card-version"]')?.textContent?.trim() ?? '';
      const line = `${health}|${current}|${version}`;
      if (seen[seen.length - 1] !== line) seen.push(line);
    };
    record();
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });

  const opened = await page.request.post('/api/v1/services/ledger/promote', { headers: { 'x-tower-csrf': '1' } });
  expect(opened.ok()).toBeTruthy();
  const pr = await opened.json();
  const merged = await request.post(`${sandboxUrl}/sandbox/pulls/${pr.number}/merge`);
  expect(merged.ok()).toBeTruthy();

  await expect(prodCard.getByTestId('card-version')).toContainText(dev.running_version, { timeout: 90_000 });
  await expect(prodCard.getByTestId('chip-health')).toContainText('Healthy', { timeout: 30_000 });
  const seen: string[] = await page.evaluate(() => (window as any).__seen);
  console.log(`prod card states seen: ${seen.join('  →  ')}`);
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
  expect(seen.some((s) => s.includes('Progressing'))).toBeTruthy();
  // Every canary step was current at some point, in order.
  const steps = seen.map((s) => Number(s.split('|')[1])).filter((n) => n >= 0);
  const distinct = steps.filter((n, i) => i === 0 || n !== steps[i - 1]);
  expect(distinct.length).toBeGreaterThanOrEqual(3);
  expect([...distinct].sort((a, b) => a - b)).toEqual(distinct);
  expect(seen[seen.length - 1]).toMatch(new RegExp(`Healthy\\|.*${dev.running_version}`));
});
