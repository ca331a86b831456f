import { test, expect } from '@playwright/test';
import { signInAs, sandboxUrl } from './session';

// Tower's pull requests live: the sandbox forge runs its CI (`tower-ci / validate`: queued, then in_progress,
// then completed) on every new head, its demo reviewer grace approves once CI passes, and every step reaches
// Tower as a signed webhook, which Tower turns into a `pull_request_updated` on the event stream. The PRs page
// never fetches on the clock, so whatever changes on it came over the stream. ada owns refunds, whose dev runs a
// newer version than prod, so Promote opens a pull request.

test('a PR Tower opens shows its check running then passed, then the approval, and its release record, without a reload', async ({ page, request }) => {
  test.setTimeout(90_000);
  await signInAs(page, 'ada', '/prs');
  await expect(page.locator('[data-testid="pr-row"], [data-testid="no-prs"]').first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('stream-indicator')).toHaveText(/Live/);
  // Anything that reloaded the page would drop these; the observer keeps every state each check showed, so a
  // state that lasted only a moment still counts.
  await page.evaluate(() => {
    const w = window as any;
    w.__towerNoReload = true;
    w.__checks = {};
    const record = () =>
      document.querySelectorAll('[data-testid="pr-row"]').forEach((row) => {
        row.querySelectorAll('[data-testid="pr-check"]').forEach((check) => {
          const key = `${row.getAttribute('data-number')} ${check.getAttribute('data-name')}`;
          const seen: string[] = (w.__checks[key] ??= []);
          const state = `${check.getAttribute('data-status')}/${check.getAttribute('data-conclusion')}`;
          if (seen[seen.length - 1] !== state) seen.push(state);
        });
      });
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true });
    record();
  });
  let polls = 0;
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/v1/pulls') polls += 1; });

  const opened = await page.request.post('/api/v1/services/refunds/promote', { headers: { 'x-tower-csrf': '1' } });
  expect(opened.ok()).toBeTruthy();
  const pr = await opened.json();
  const row = page.locator(`[data-testid="pr-row"][data-number="${pr.number}"]`);
  await expect(row).toBeVisible({ timeout: 15_000 });

  const check = row.locator('[data-testid="pr-check"][data-name="tower-ci / validate"]');
  await expect(check).toHaveAttribute('data-conclusion', 'success', { timeout: 30_000 });
  await expect(check).toHaveAttribute('data-status', 'completed');
  await expect(check).toContainText('passed');
  const seen: string[] = await page.evaluate((key) => (window as any).__checks[key] ?? [], `${pr.number} tower-ci / validate`);
  expect(seen, `states shown: ${seen.join(' → ')}`).toContain('in_progress/');
  expect(seen.indexOf('in_progress/')).toBeLessThan(seen.indexOf('completed/success'));

  const approval = row.locator('[data-testid="pr-review"][data-state="approved"][data-reviewer="grace"]');
  await expect(approval).toBeVisible({ timeout: 30_000 });
  await expect(row.locator('[data-testid="pr-blocker"][data-kind="approval_required"]')).toHaveCount(0);
  await expect(row.locator('[data-testid="pr-blocker"][data-kind="checks_running"]')).toHaveCount(0);
  expect(await page.evaluate(() => (window as any).__towerNoReload)).toBe(true);
  expect(polls, 'the PRs page fetched no list after it loaded').toBe(0);

  // Merged, it becomes a release record of refunds in prod, with who approved it: the Releases page (every
  // service's records) shows it when the stream says main moved.
  await page.goto('/releases');
  await expect(page.getByTestId('release-row').first()).toBeVisible({ timeout: 15_000 });
  await page.evaluate(() => { (window as any).__towerNoReload = true; });
  const merged = await request.post(`${sandboxUrl}/sandbox/pulls/${pr.number}/merge`);
  expect(merged.ok()).toBeTruthy();
  const record = page.locator(`[data-testid="release-row"][data-pr="${pr.number}"]`);
  await expect(record).toBeVisible({ timeout: 20_000 });
  await expect(record.getByTestId('release-service')).toHaveText('refunds');
  await expect(record.getByTestId('release-approvals')).toHaveText('grace');
  expect(await page.evaluate(() => (window as any).__towerNoReload)).toBe(true);
  await record.locator('a').first().click();
  await expect(page.getByTestId('release-detail').locator('[data-testid="release-approval"][data-reviewer="grace"]')).toBeVisible();
});
