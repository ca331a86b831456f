import { test, expect } from '@playwright/test';
import { expectAccessible } from './axe';
import { signInAs, signInAsGuest, card, sandboxUrl } from './session';

// Log history: after the simulator replaces a pod during a rollout, the owner reads the old pod's last lines
// from the deployment card's log panel, marked as from the log store.
test('the owner reads a replaced pod\'s last lines from the log store', async ({ page, request }) => {
  test.setTimeout(150_000);
  await signInAs(page, 'ada', '/services/ledger?env=prod');
  await expect(card(page, 'prod').getByTestId('logs-button')).toBeVisible();

  const detail = await (await page.request.get('/api/v1/services/ledger')).json();
  const dev = detail.cards.find((c: any) => c.environment === 'dev');
  const prod = detail.cards.find((c: any) => c.environment === 'prod');
  const before: string[] = prod.pods.map((p: any) => p.name);
  expect(before.length).toBeGreaterThan(0);

  // A rollout of ledger in prod: Promote when dev runs something else, else Rollback (live-rollout.spec may
  // already have promoted it). Either way the simulator replaces prod's pods.
  const move = dev.running_version !== prod.running_version ? 'promote' : 'rollback';
  const opened = await page.request.post(`/api/v1/services/ledger/${move}`, { headers: { 'x-tower-csrf': '1' } });
  expect(opened.ok(), `${move}: ${await opened.text()}`).toBeTruthy();
  const pr = await opened.json();
  const merged = await request.post(`${sandboxUrl}/sandbox/pulls/${pr.number}/merge`);
  expect(merged.ok()).toBeTruthy();

  // Wait until the store keeps one of the replaced pods.
  let gone = '';
  await expect(async () => {
    const listing = await (await page.request.get('/api/v1/services/ledger/environments/prod/log-pods')).json();
    expect(listing.store).toBe(true);
    const found = listing.pods.find((p: any) => p.gone && before.includes(p.name));
    expect(found, JSON.stringify(listing)).toBeTruthy();
    gone = found.name;
  }).toPass({ timeout: 120_000, intervals: [1_000] });

  // The panel offers it, marked gone; picking it shows its last lines from the store.
  await card(page, 'prod').getByTestId('logs-button').click();
  const panel = page.getByTestId('log-panel');
  await expect(panel).toBeVisible();
  const option = panel.locator(`[data-testid="log-pod"] option[value="${gone}"]`);
  await expect(option).toHaveText(`${gone} (gone)`, { timeout: 15_000 });
  await panel.getByTestId('log-pod').selectOption(gone);
  await expect(panel.getByTestId('log-store-badge')).toBeVisible();
  const stored = panel.locator('[data-testid="log-line"][data-source="store"]');
  await expect(stored.first()).toBeVisible({ timeout: 15_000 });
  await expect(panel.locator('[data-testid="log-line"][data-source="live"]')).toHaveCount(0);
  await expect(panel.getByTestId('log-status')).toContainText('End of the stored log');
  await expect(panel.getByTestId('log-live-only')).toHaveCount(0);
  await expectAccessible(page, 'the log panel showing a gone pod\'s stored lines');

  // Back to a running pod: its lines are live again.
  const running = (await (await page.request.get('/api/v1/services/ledger')).json())
    .cards.find((c: any) => c.environment === 'prod').pods[0].name;
  await panel.getByTestId('log-pod').selectOption(running);
  await expect(panel.locator('[data-testid="log-line"][data-source="live"]').first()).toBeVisible({ timeout: 15_000 });
  await expect(panel.getByTestId('log-store-badge')).toHaveCount(0);
});

test('a guest reads no logs, live or stored', async ({ page }) => {
  await signInAsGuest(page, '/services/ledger');
  for (const path of [
    '/api/v1/services/ledger/environments/prod/log-pods',
    '/api/v1/services/ledger/environments/prod/logs?pod=ledger-gone-1&follow=false&previous=false&tail=5',
  ]) {
    const response = await page.request.get(path);
    expect(response.status(), path).toBe(403);
  }
});
