import { test, expect, type Page, type APIRequestContext } from '@playwright/test';
import { signInAs, signInAsGuest, card } from './session';

// Pipelines against the sandbox's Tekton: payments has 8 builds of main and 15 runs of pull requests (more than
// a page); a red commit's run fails in `test` (its `unit` step ends with "Error: 1 test failed") and skips the
// tasks after it because the PipelineRun was stopping; ledger's toolchain bump skipped `scan` by its `when`
// expression; `notify` runs in `finally`. The simulator pushes to random services all along, so a new run
// starts every few seconds of test time (the sandbox runs ten times faster than real time).

interface Run {
  namespace: string;
  name: string;
  service: string;
  status: string;
  branch: string | null;
  trigger: string;
  created_at: string;
}

/** One page of runs from the API, as the signed-in page's cookies allow. */
async function runs(request: APIRequestContext, path: string): Promise<{ runs: Run[]; next: string | null }> {
  const response = await request.get(`/api/v1${path}`);
  expect(response.ok(), `${path}: ${response.status()}`).toBeTruthy();
  return response.json();
}

/**
 * The newest failed run with a failing `test` task; with `readable`, one whose log the signed-in user may read
 * (a service of their team) and that still exists (only the newest runs keep their pods).
 */
async function failedRun(request: APIRequestContext, readable = false): Promise<Run> {
  let path = '/pipelines?status=failed';
  for (let pages = 0; pages < 10; pages += 1) {
    const page = await runs(request, path);
    for (const run of page.runs) {
      const detail = await (await request.get(`/api/v1/pipelines/${run.namespace}/${run.name}`)).json();
      const testTask = detail.tasks.find((t: any) => t.name === 'test');
      if (testTask?.status !== 'failed' || !testTask.pod) continue;
      if (!readable) return run;
      // Its pod still exists: the log downloads (a gone pod's answers 410).
      const log = `/api/v1/services/${run.service}/pipelines/${run.namespace}/${run.name}/tasks/test/steps/unit/log.txt`;
      if (detail.can_read_logs && (await request.get(log)).ok()) return run;
    }
    if (!page.next) break;
    path = `/pipelines?status=failed&cursor=${page.next}`;
  }
  throw new Error(`no failed run with a failing test task${readable ? ' whose logs this user reads' : ''}`);
}

const rows = (page: Page) => page.getByTestId('run-row');
const runPath = (run: Run) => `/pipelines/${run.namespace}/${run.name}`;

async function rowNames(page: Page): Promise<string[]> {
  return rows(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-run') ?? ''));
}

test('the Pipelines tab lists a service\'s runs newest first, 20 a page, with next and previous pages', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=pipelines');
  await expect(page.getByTestId('tab-pipelines')).toHaveAttribute('aria-current', 'page');
  await expect(rows(page)).toHaveCount(20, { timeout: 15_000 });
  const created = await rows(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-created') ?? ''));
  expect([...created].sort().reverse()).toEqual(created);
  await expect(page.getByTestId('run-list-previous')).toBeDisabled();
  const first = await rowNames(page);

  await page.getByTestId('run-list-next').click();
  await expect(page).toHaveURL(/[?&]cursor=[0-9a-f]+/);
  await expect(page).toHaveURL(/[?&]tab=pipelines(&|$)/);
  await expect.poll(async () => (await rowNames(page)).some((n) => first.includes(n)), { timeout: 15_000 }).toBe(false);
  const second = await rowNames(page);
  expect(second.length).toBeGreaterThan(0);
  expect(second.length).toBeLessThanOrEqual(20);
  // Older than everything on the first page.
  const secondCreated = await rows(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-created') ?? ''));
  expect(secondCreated[0] <= created[created.length - 1]).toBe(true);

  await page.getByTestId('run-list-previous').click();
  // Back to the first page's runs (runs started since then may sit above them).
  await expect(page.locator(`[data-testid="run-row"][data-run="${first[first.length - 1]}"]`)).toHaveCount(1, { timeout: 15_000 });
  for (const name of second) await expect(page.locator(`[data-testid="run-row"][data-run="${name}"]`)).toHaveCount(0);
});

test('filters live in the URL, a reload keeps them, and clearing them shows every run again', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=pipelines');
  await expect(rows(page).first()).toBeVisible({ timeout: 15_000 });

  await page.getByTestId('filter-status').selectOption('succeeded');
  await expect(page).toHaveURL(/[?&]status=succeeded(&|$)/);
  await expect(page).toHaveURL(/[?&]tab=pipelines(&|$)/);
  await page.getByTestId('filter-revision').fill('main');
  await page.getByTestId('filter-revision').press('Enter');
  await expect(page).toHaveURL(/[?&]revision=main(&|$)/);
  await page.getByTestId('filter-trigger').selectOption('github-push');
  await expect(page).toHaveURL(/[?&]trigger=github-push(&|$)/);
  await expect(rows(page).first()).toBeVisible({ timeout: 15_000 });
  const check = async () => {
    for (const status of await rows(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-status')))) {
      expect(status).toBe('succeeded');
    }
    for (const text of await rows(page).allInnerTexts()) expect(text).toContain('main');
  };
  await check();

  await page.reload();
  await expect(rows(page).first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('filter-status')).toHaveValue('succeeded');
  await expect(page.getByTestId('filter-revision')).toHaveValue('main');
  await expect(page.getByTestId('filter-trigger')).toHaveValue('github-push');
  await check();

  // Nothing matches: the list says so and offers to clear the filters.
  await page.getByTestId('filter-revision').fill('no-such-branch');
  await page.getByTestId('filter-revision').press('Enter');
  await expect(page.getByTestId('no-runs')).toContainText('No runs match these filters');
  await page.getByTestId('clear-filters-empty').click();
  await expect(page).not.toHaveURL(/status=|revision=|trigger=/);
  await expect(page).toHaveURL(/[?&]tab=pipelines(&|$)/);
  await expect(rows(page)).toHaveCount(20, { timeout: 15_000 });
});

test('the fleet-wide list filters by service through the URL', async ({ page }) => {
  await signInAsGuest(page, '/pipelines?service=ledger');
  await expect(page.getByTestId('nav-pipelines')).toHaveAttribute('aria-current', 'page');
  await expect(rows(page).first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('filter-service')).toHaveValue('ledger');
  for (const text of await rows(page).locator('td:nth-child(3)').allInnerTexts()) expect(text).toBe('ledger');
});

test('a run page shows the DAG with the finally group and each skipped task with its reason', async ({ page }) => {
  await signInAsGuest(page, '/');
  const failed = await failedRun(page.request);
  await page.goto(runPath(failed));
  await expect(page.getByTestId('run-header')).toHaveAttribute('data-status', 'failed', { timeout: 15_000 });
  const dag = page.getByTestId('dag');
  await expect(dag).toBeVisible();
  expect(Number(await dag.getAttribute('data-layout-ms'))).toBeGreaterThanOrEqual(0);
  await expect(page.getByTestId('finally-group')).toContainText('finally');
  // notify sits inside the finally box.
  const group = await page.getByTestId('finally-group').locator('rect').boundingBox();
  const notify = await page.getByTestId('dag-node-notify').boundingBox();
  expect(group && notify && notify.x >= group.x && notify.x + notify.width <= group.x + group.width + 1).toBeTruthy();
  await expect(page.getByTestId('dag-node-test')).toHaveAttribute('aria-label', 'test: Failed');
  await expect(page.getByTestId('dag-node-clone')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('dag-node-notify')).toHaveAttribute('data-status', 'succeeded');
  // Edges carry the results they pass.
  await expect(page.getByTestId('edge-label').filter({ hasText: 'IMAGE_DIGEST' }).first()).toBeAttached();

  const skipped = page.getByTestId('dag-node-build-image');
  await expect(skipped).toHaveAttribute('data-status', 'skipped');
  await expect(skipped.locator('title')).toContainText('PipelineRun was stopping');
  await skipped.click();
  await expect(page).toHaveURL(/[?&]task=build-image(&|$)/);
  await expect(page.getByTestId('task-panel')).toHaveAttribute('data-task', 'build-image');
  await expect(page.getByTestId('task-skip-reason')).toHaveText('PipelineRun was stopping');

  // ledger's run that skipped its scan by a `when` expression.
  const ledger = await runs(page.request, '/services/ledger/pipelines');
  let whenSkipped: Run | undefined;
  for (const run of ledger.runs) {
    const detail = await (await page.request.get(`/api/v1/pipelines/${run.namespace}/${run.name}`)).json();
    if (detail.tasks.some((t: any) => t.name === 'scan' && t.skip_reason === 'When Expressions evaluated to false')) {
      whenSkipped = run;
      break;
    }
  }
  expect(whenSkipped, 'ledger has a run whose when expression skipped scan').toBeTruthy();
  await page.goto(`${runPath(whenSkipped!)}?task=scan`);
  const scan = page.getByTestId('dag-node-scan');
  await expect(scan).toHaveAttribute('data-status', 'skipped', { timeout: 15_000 });
  await expect(scan.getByTestId('when-marker')).toBeVisible();
  await expect(scan.getByTestId('dag-skip-reason')).toBeVisible();
  await expect(page.getByTestId('task-skip-reason')).toHaveText('When Expressions evaluated to false');
  await expect(page.getByTestId('task-when')).toContainText('did not hold');
});

test('the owner opens the failed task, reads its failing step\'s log and finds the error line by search', async ({ page }) => {
  await signInAs(page, 'ada', '/');
  const failed = await failedRun(page.request, true);
  await page.goto(runPath(failed));
  await page.getByTestId('dag-node-test').click();
  const panel = page.getByTestId('task-panel');
  await expect(panel).toHaveAttribute('data-task', 'test');
  await expect(panel.getByTestId('task-status')).toHaveAttribute('data-value', 'Failed');
  await expect(panel.getByTestId('step-unit')).toContainText('exit 1');
  await panel.getByTestId('step-unit').click();
  await expect(page).toHaveURL(/[?&]task=test&step=unit(&|#|$)/);

  const consoleBox = page.getByTestId('log-console');
  await expect(consoleBox.getByTestId('log-line').first()).toBeVisible({ timeout: 15_000 });
  await expect(consoleBox.getByTestId('log-status')).toContainText('End of log', { timeout: 15_000 });
  await expect(consoleBox.getByTestId('log-download')).toHaveAttribute('href', /\/log\.txt$/);

  // Ctrl+F inside the console goes to its search.
  await consoleBox.getByTestId('log-viewport').focus();
  await page.keyboard.press('Control+f');
  await expect(consoleBox.getByTestId('log-search')).toBeFocused();
  await page.keyboard.type('Error: 1 test failed');
  await expect(consoleBox.getByTestId('log-match-count')).toHaveText(/^1 of [1-9]\d*$/);
  const current = consoleBox.locator('mark.current');
  await expect(current).toHaveText('Error: 1 test failed');
  await expect(current).toBeInViewport();
  await page.keyboard.press('Enter');
  await expect(consoleBox.getByTestId('log-match-count')).toHaveText(/^\d+ of \d+$/);

  // Only the lines in view are in the DOM: the top of the log again.
  await consoleBox.getByTestId('log-viewport').evaluate((el) => { el.scrollTop = 0; });
  // A line's number is a link: it goes into the URL and marks the line; opening that URL scrolls to it.
  const line = consoleBox.locator('[data-testid="log-line"][data-line="3"]');
  await line.locator('.console-ln').click();
  await expect(page).toHaveURL(/#L3$/);
  await expect(line).toHaveClass(/selected/);
  await page.reload();
  await expect(page.locator('[data-testid="log-line"][data-line="3"]')).toHaveClass(/selected/, { timeout: 15_000 });
});

test('a guest sees runs and the DAG, but the log says it is owner-only and the API refuses it', async ({ page }) => {
  await signInAsGuest(page, '/');
  const failed = await failedRun(page.request);
  await page.goto(`${runPath(failed)}?task=test&step=unit`);
  await expect(page.getByTestId('dag-node-test')).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('log-forbidden')).toContainText('owner-only');
  await expect(page.getByTestId('log-line')).toHaveCount(0);
  await expect(page.getByTestId('log-download')).toHaveCount(0);
  const log = `/api/v1/services/${failed.service}/pipelines/${failed.namespace}/${failed.name}/tasks/test/steps/unit/log`;
  expect((await page.request.get(`${log}?follow=false`)).status()).toBe(403);
  expect((await page.request.get(`${log}.txt`)).status()).toBe(403);
});

test('a keyboard user tabs to a task and opens it with Enter', async ({ page }) => {
  await signInAsGuest(page, '/');
  const failed = await failedRun(page.request);
  await page.goto(runPath(failed));
  await expect(page.getByTestId('dag')).toBeVisible({ timeout: 15_000 });
  await page.getByTestId('run-service').focus();
  let focused = '';
  for (let i = 0; i < 40 && !focused.startsWith('dag-node-'); i += 1) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? '');
  }
  expect(focused).toMatch(/^dag-node-/);
  await page.keyboard.press('Enter');
  const task = focused.replace('dag-node-', '');
  await expect(page.getByTestId('task-panel')).toHaveAttribute('data-task', task);
  await expect(page).toHaveURL(new RegExp(`[?&]task=${task}(&|$)`));
});

test('failed runs in the activity feed and the dev card\'s version link to their run pages', async ({ page }) => {
  await signInAsGuest(page, '/');
  const activity: any[] = await (await page.request.get('/api/v1/activity')).json();
  const failure = activity.find((item) => item.kind === 'pipeline_failed');
  expect(failure, 'a pipeline failure in the activity').toBeTruthy();
  expect(failure.link).toMatch(/^\/pipelines\/[^/]+\/[^/]+$/);
  await expect(page.locator('[data-testid="activity-item"][data-kind="pipeline_failed"] [data-testid="activity-link"]').first())
    .toHaveAttribute('href', /^\/pipelines\//, { timeout: 15_000 });

  await page.goto('/services/payments');
  const link = card(page, 'dev').getByTestId('card-build-link');
  await expect(link).toHaveAttribute('href', /^\/pipelines\/[^/]+\/payments-/, { timeout: 15_000 });
  await link.click();
  await expect(page.getByTestId('run-header')).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('run-service')).toHaveText('payments');
});

test('a run the simulator starts appears at the top without a reload, and its tasks turn green one by one', async ({ page }) => {
  test.setTimeout(180_000);
  await signInAsGuest(page, '/pipelines');
  await expect(rows(page).first()).toBeVisible({ timeout: 15_000 });
  await page.evaluate(() => { (window as any).__noReload = true; });
  const before = new Set(await rowNames(page));

  // The simulator's next push starts a build within seconds; it lands on top of the list.
  let fresh = '';
  await expect.poll(async () => {
    fresh = (await rowNames(page))[0] ?? '';
    return before.has(fresh) ? '' : fresh;
  }, { timeout: 90_000, intervals: [500] }).not.toBe('');
  const row = page.locator(`[data-testid="run-row"][data-run="${fresh}"]`);
  await expect(row).toHaveAttribute('data-status', /running|pending/);

  // Its page, reached without a reload, shows its tasks finishing one after another.
  await row.getByTestId('run-link').click();
  await expect(page.getByTestId('dag')).toBeVisible({ timeout: 15_000 });
  const seen = new Set<number>();
  let unfinishedWhileGreen = false;
  await expect.poll(async () => {
    const statuses = await page.locator('[data-testid^="dag-node-"]').evaluateAll(
      (els) => els.map((e) => e.getAttribute('data-status') ?? ''),
    );
    const green = statuses.filter((s) => s === 'succeeded').length;
    if (green > 0) seen.add(green);
    if (green > 0 && statuses.some((s) => s === 'pending' || s === 'running')) unfinishedWhileGreen = true;
    return seen.size;
  }, { timeout: 120_000, intervals: [250] }).toBeGreaterThanOrEqual(3);
  expect(unfinishedWhileGreen).toBe(true);
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
});
