import { test, expect, type Locator, type Page } from '@playwright/test';
import { signInAsGuest } from './session';
import { expectAccessible, failWith503, hold } from './axe';

// The /config page against the sandbox: Argo CD's ApplicationSets (taskapp-catalog generates every service's
// `<svc>-<env>` Application; catalog-prod is OutOfSync), the clusters management, dev and prod (all connected),
// and Tower's settings, whose secrets say only whether they are set. Any signed-in user may read it.

const CONFIG_API = '**/api/v1/config';

/** The ApplicationSet called `name`. */
const applicationSet = (page: Page, name: string): Locator =>
  page.locator(`[data-testid="application-set"][data-name="${name}"]`);

/** The row of the generated Application `name` inside `set`. */
const generated = (set: Locator, name: string): Locator =>
  set.locator(`[data-testid="generated-application"][data-name="${name}"]`);

const setting = (page: Page, key: string): Locator => page.locator(`[data-testid="setting"][data-key="${key}"]`);

async function loaded(page: Page) {
  await expect(page.getByTestId('platform-config')).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('loading')).toHaveCount(0, { timeout: 15_000 });
}

test('a guest opens /config from the nav: ApplicationSets with their Applications, the clusters, the settings without secrets', async ({ page }) => {
  await signInAsGuest(page, '/');
  await page.getByTestId('nav-platform').click();
  await expect(page).toHaveURL(/\/platform$/);
  await loaded(page);

  // The catalog's set: its generators in words, the Applications it generated with their sync and health.
  const catalog = applicationSet(page, 'taskapp-catalog');
  await expect(catalog).toHaveCount(1);
  const generators = catalog.getByTestId('generator');
  await expect(generators.first()).toContainText('components/*/environments/*.yaml');
  await expect(generators.first()).toContainText('clusters');
  await expect(generated(catalog, 'payments-prod')).toHaveCount(1);
  const outOfSync = generated(catalog, 'catalog-prod');
  await expect(outOfSync).toHaveAttribute('data-sync', 'OutOfSync');
  // In words, not colour alone.
  await expect(outOfSync.getByTestId('chip-sync')).toHaveText(/OutOfSync/);
  await expect(catalog.getByTestId('application-set-summary')).toContainText(/\d+ OutOfSync/);
  // The YAML is folded until asked for.
  const yaml = catalog.getByTestId('application-set-yaml');
  await expect(yaml).toBeHidden();
  await catalog.getByTestId('application-set-yaml-fold').locator('summary').click();
  await expect(yaml).toContainText('kind: ApplicationSet');
  await expect(yaml).toContainText('name: taskapp-catalog');

  // The three clusters, connected, in words.
  const clusters = page.getByTestId('cluster');
  await expect(clusters).toHaveCount(3);
  for (const name of ['management', 'dev', 'prod']) {
    const cluster = page.locator(`[data-testid="cluster"][data-name="${name}"]`);
    await expect(cluster).toHaveAttribute('data-state', 'connected');
    await expect(cluster.getByTestId('cluster-state')).toHaveText(/Connected/);
  }

  // Settings: a secret says it is set, with a lock, and never shows its value.
  const key = setting(page, 'github.app_private_key');
  await expect(key).toHaveAttribute('data-secret', 'true');
  await expect(key.getByTestId('setting-value')).toHaveText(/^(Secret: )?set$/);
  await expect(key.locator('svg.lock')).toHaveCount(1);
  await expect(setting(page, 'organisation').getByTestId('setting-value')).toHaveText('acme');
  expect(await page.locator('body').innerText()).not.toContain('PRIVATE KEY');
  expect(await page.content()).not.toContain('PRIVATE KEY');

  await expectAccessible(page, '/config');

  // An Application of a service links to that service's page, in its environment.
  const link = generated(catalog, 'payments-prod').getByTestId('application-link');
  await expect(link).toHaveAttribute('href', '/services/payments?env=prod');
  await link.click();
  await expect(page).toHaveURL(/\/services\/payments\?env=prod$/);
  await expect(page.getByTestId('service-header')).toBeVisible({ timeout: 15_000 });
});

test('each section has its own address, and the settings filter lives in it', async ({ page }) => {
  await signInAsGuest(page, '/config?section=clusters');
  await loaded(page);
  await expect(page.getByTestId('config-clusters')).toBeVisible();
  await expect(page.getByTestId('config-application-sets')).toHaveCount(0);
  await expect(page.getByTestId('config-settings')).toHaveCount(0);
  await expect(page.getByTestId('section-clusters')).toHaveAttribute('aria-current', 'true');

  await page.getByTestId('section-settings').click();
  await expect(page).toHaveURL(/\/platform\?section=settings$/);
  await expect(page.getByTestId('config-settings')).toBeVisible();
  await expect(page.getByTestId('config-clusters')).toHaveCount(0);

  // `/` jumps to the filter; it narrows the keys and goes into the URL.
  await page.locator('h1').click();
  await page.keyboard.press('/');
  await expect(page.getByTestId('settings-filter')).toBeFocused();
  await page.keyboard.type('GitHub.');
  await expect(page).toHaveURL(/\/platform\?section=settings&q=GitHub\.$/);
  const keys = await page.getByTestId('setting').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key') ?? ''));
  expect(keys.length).toBeGreaterThan(1);
  for (const key of keys) expect(key).toMatch(/^github\./);
  await expect(setting(page, 'github.app_private_key')).toHaveCount(1);
  await expect(setting(page, 'organisation')).toHaveCount(0);

  // The address reproduces the screen.
  await page.reload();
  await loaded(page);
  await expect(page.getByTestId('settings-filter')).toHaveValue('GitHub.');
  await expect(page.getByTestId('setting')).toHaveCount(keys.length);

  await page.getByTestId('settings-filter').fill('no-such-key');
  await expect(page.getByTestId('no-matching-settings')).toContainText('no-such-key');
  await expect(page.getByTestId('settings')).toHaveCount(0);

  await page.getByTestId('section-all').click();
  await expect(page).toHaveURL(/\/platform\?q=no-such-key$/);
  await expect(page.getByTestId('config-application-sets')).toBeVisible();
  await expect(page.getByTestId('config-clusters')).toBeVisible();
});

test('an unreachable cluster says since when and why, and a set without Applications says so', async ({ page }) => {
  // Without the event stream the page shows the clusters as the answer has them.
  await page.route('**/api/v1/events', (route) => route.abort());
  const since = new Date(Date.now() - 12 * 60_000).toISOString();
  await page.route(CONFIG_API, async (route) => {
    const response = await route.fetch();
    const config = await response.json();
    for (const cluster of config.clusters) {
      if (cluster.name === 'prod') cluster.state = { state: 'unreachable', since, reason: 'connection refused' };
    }
    config.application_sets.push({ name: 'empty-set', generators: [], applications: [], yaml: 'kind: ApplicationSet\n' });
    await route.fulfill({ response, json: config });
  });
  await signInAsGuest(page, '/config');
  await loaded(page);
  const prod = page.locator('[data-testid="cluster"][data-name="prod"]');
  await expect(prod).toHaveAttribute('data-state', 'unreachable');
  await expect(prod.getByTestId('cluster-state')).toHaveText(/Unreachable/);
  await expect(prod.getByTestId('cluster-state-detail')).toHaveText(
    /Unreachable since \d\d:\d\d UTC \(12 min ago\): connection refused\./,
  );
  await expect(page.locator('[data-testid="cluster"][data-name="dev"]')).toHaveAttribute('data-state', 'connected');
  const empty = applicationSet(page, 'empty-set');
  await expect(empty.getByTestId('no-generators')).toBeVisible();
  await expect(empty.getByTestId('no-generated-applications')).toBeVisible();
  await expectAccessible(page, '/config with an unreachable cluster');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
});

test('the page shows a skeleton while it loads and says so when the load fails', async ({ page }) => {
  await signInAsGuest(page, '/');
  const release = await hold(page, CONFIG_API);
  await page.getByTestId('nav-platform').click();
  await expect(page.getByTestId('platform-config').getByTestId('loading').first()).toBeVisible({ timeout: 15_000 });
  release();
  await expect(page.getByTestId('application-set').first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('loading')).toHaveCount(0);

  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await failWith503(page, CONFIG_API);
  await page.reload();
  await expect(page.getByTestId('platform-config').getByTestId('error')).toContainText('Tower answered 503', { timeout: 15_000 });
  await expect(page.getByTestId('application-set')).toHaveCount(0);
  // The rest of Tower keeps working.
  await page.getByTestId('nav-pipelines').click();
  await expect(page).toHaveURL(/\/pipelines$/);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
});
