// The platform as Argo CD runs it, against the sandbox: the five ApplicationSets generate one Application per
// file of `platform/`, `infra/` and `packages/` and per matching cluster. `/platform` shows the platform's own
// components per cluster (release-operator and argo-rollouts lag one version on prod), each platform
// resource shows its own Application where Tower shows the resource, a CI bot's version bump reaches the page
// on the event stream, and a cluster brought up from nothing (`--fresh dev`) shows apps waiting for another
// app's CRDs before they converge.
import { test, expect, type Locator, type Page } from '@playwright/test';
import * as path from 'node:path';
import { sandboxUrl, signInAsGuest } from './session';
import { expectAccessible } from './axe';
import { asGuestOn, ownTower } from './own-tower';

const cell = (page: Page, component: string, cluster: string): Locator =>
  page.getByTestId(`platform-cell-${component}-${cluster}`);

const row = (page: Page, component: string): Locator =>
  page.locator(`[data-testid="platform-row"][data-name="${component}"]`);

async function loaded(page: Page) {
  await expect(page.getByTestId('platform-matrix')).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('loading')).toHaveCount(0, { timeout: 15_000 });
}

async function sandbox(path: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${sandboxUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status, `${path}: ${await response.clone().text()}`).toBeLessThan(300);
  return response;
}

test('/platform shows each component per cluster with the prod/dev skew marked', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await signInAsGuest(page, '/');
  await page.getByTestId('nav-platform').click();
  await expect(page).toHaveURL(/\/platform$/);
  await loaded(page);

  // release-operator runs everywhere; prod is one version behind, and the row says so in words.
  const dev = cell(page, 'release-operator', 'dev');
  const prod = cell(page, 'release-operator', 'prod');
  await expect(dev.getByTestId('platform-version')).toHaveText(/\d+\.\d+\.\d+/);
  await expect(prod.getByTestId('platform-version')).toHaveText(/\d+\.\d+\.\d+/);
  const devVersion = (await dev.getByTestId('platform-version').innerText()).trim();
  const prodVersion = (await prod.getByTestId('platform-version').innerText()).trim();
  expect(devVersion).not.toEqual(prodVersion);
  await expect(row(page, 'release-operator').getByTestId('skew')).toContainText(
    `prod runs release-operator ${prodVersion}`,
  );
  await expect(row(page, 'release-operator').getByTestId('skew')).toContainText(devVersion);
  // A component that agrees everywhere has no skew mark.
  await expect(row(page, 'crossplane').getByTestId('skew')).toHaveCount(0);
  // Tekton runs on management only: the other clusters' cells say it is not installed.
  await expect(cell(page, 'tekton', 'management').getByTestId('platform-version')).toBeVisible();
  await expect(cell(page, 'tekton', 'dev').getByTestId('platform-version')).toHaveCount(0);

  // Each cell: sync and health in words, the last bump by its bot, links to the file and the Application.
  await expect(dev).toContainText('Synced');
  await expect(dev).toContainText('Healthy');
  await expect(dev.getByTestId('platform-bump')).toContainText('[bot]', { timeout: 15_000 });
  await expect(dev.getByTestId('platform-file-link')).toHaveAttribute('href', /infra\/release-operator\/dev\.yaml$/);
  await expect(dev.getByTestId('platform-application-link')).toHaveAttribute(
    'href',
    /\/applications\/argocd\/infra-release-operator-dev$/,
  );

  // Tower's own row says which version serves this page and which one infra/ asks for.
  await expect(page.getByTestId('platform-serving')).toContainText(/serv/i);

  // The Crossplane packages per cluster.
  await expect(page.getByTestId('platform-packages')).toBeVisible();
  await expect(page.getByTestId('platform-counts')).toContainText(/healthy/i);

  await expectAccessible(page, '/platform');
  if (process.env.TOWER_SCREENSHOTS) {
    await page.goto('/platform?section=components');
    await loaded(page);
    await page.screenshot({ path: path.resolve(__dirname, '../../docs/platform.png') });
  }

  // The old address still opens the same page.
  await page.goto('/config?section=clusters');
  await expect(page).toHaveURL(/\/platform\?section=clusters$/);
  await expect(page.getByTestId('config-clusters')).toBeVisible({ timeout: 15_000 });
});

test('a CI bot bump reaches /platform without a reload', async ({ page }) => {
  await signInAsGuest(page, '/platform');
  await loaded(page);
  // A marker that a reload would lose.
  await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
  const dev = cell(page, 'schema-operator', 'dev');
  const before = (await dev.getByTestId('platform-version').innerText()).trim();

  const bumped = (await (await sandbox('/sandbox/platform/bump', { component: 'schema-operator', cluster: 'dev' })).json()) as {
    version: string;
    commit: string;
  };
  expect(bumped.version).not.toEqual(before);

  await expect(dev.getByTestId('platform-version')).toHaveText(bumped.version, { timeout: 20_000 });
  await expect(dev.getByTestId('platform-bump')).toContainText(bumped.commit.slice(0, 7), { timeout: 20_000 });
  await expect(dev.getByTestId('platform-bump')).toContainText('[bot]');
  // Prod has not taken it yet: the row now marks the skew.
  await expect(row(page, 'schema-operator').getByTestId('skew')).toContainText(bumped.version);
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
});

test("a Release's and a Database's own Applications show where Tower shows the resource", async ({ page }) => {
  await signInAsGuest(page, '/services/refunds?env=prod');
  const card = page.locator('[data-testid="deployment-card"][data-env="prod"]');
  const own = card.getByTestId('release-application');
  await expect(own).toContainText('release-refunds-prod', { timeout: 15_000 });
  await expect(own).toContainText('Synced');
  await expect(card.getByTestId('release-application-problem')).toHaveCount(0);

  // Someone edits the live Release by hand: its Application goes OutOfSync, and the card says so in words.
  await sandbox('/sandbox/applications/release-refunds-prod/out-of-sync');
  await expect(card.getByTestId('release-application-problem')).toContainText(
    'Application release-refunds-prod is OutOfSync',
    { timeout: 15_000 },
  );

  // The same for a Database, on the databases tab.
  await sandbox('/sandbox/applications/database-payments-dev/out-of-sync');
  await page.goto('/services/payments?tab=databases');
  const database = page.locator('[data-testid="database-row"][data-database="payments"][data-env="dev"]');
  await expect(database.getByTestId('database-application-problem')).toContainText(
    'Application database-payments-dev is OutOfSync',
    { timeout: 15_000 },
  );
  await expect(
    page.locator('[data-testid="database-row"][data-database="payments"][data-env="prod"]').getByTestId('database-application'),
  ).toContainText('Synced');
});

test.describe('a workload cluster brought up from nothing', () => {
  const { base } = ownTower(9, ['--fresh', 'dev', '--speed', '10'], 90_000);

  test('apps waiting for another app\'s CRD say so, apart from failures, then converge', async ({ page }) => {
    test.setTimeout(150_000);
    await asGuestOn(page, base, '/platform');
    await loaded(page);

    const waiting = page.getByTestId('platform-waiting');
    await expect(waiting).toContainText(
      'waiting for servicemonitors.monitoring.coreos.com from infra-metrics-stack-dev',
      { timeout: 60_000 },
    );
    await expect(cell(page, 'release-operator', 'dev')).toContainText('waiting for', { timeout: 30_000 });
    // Waiting is counted apart from real failures.
    await expect(page.getByTestId('platform-counts')).toContainText(/waiting/i);
    await expectAccessible(page, '/platform on a fresh cluster');

    // Argo CD retries; once metrics-stack is Healthy everything converges, without a reload.
    await expect(cell(page, 'release-operator', 'dev')).toContainText('Healthy', { timeout: 120_000 });
    await expect(page.getByTestId('platform-waiting')).toHaveCount(0, { timeout: 60_000 });
  });
});
