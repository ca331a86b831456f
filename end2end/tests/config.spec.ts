import { test, expect, type Locator, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { signInAs, signInAsGuest } from './session';
import { expectAccessible, failWith503, hold } from './axe';

// The Config tab against the sandbox: payments' platform files on main beside the management cluster's objects.
// ada owns payments. cart's prod Release was changed by hand on the cluster (`spec.autoDeploy` true there, false
// in git), so it drifts. The editor checks a file in the browser as it is typed (the same validator as the
// server's, compiled to wasm); nothing is sent before Preview.

const PROD_RELEASE = 'platform/environments/prod/payments-release.yaml';
const DEV_RELEASE = 'platform/environments/dev/payments-release.yaml';

/** The Release of `env` in the Config tab. */
const release = (page: Page, env: string): Locator =>
  page.locator(`[data-testid="config-env"][data-env="${env}"] [data-testid="config-resource"][data-kind="Release"]`);

async function openConfig(page: Page, service: string, query = '') {
  await expect(page.getByTestId('tab-config')).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('config-tab')).toBeVisible();
  await expect(page.getByTestId('config-env').first()).toBeVisible({ timeout: 15_000 });
  expect(page.url()).toContain(`/services/${service}?tab=config${query}`);
}

test('an owner sees each environment\'s Release in git beside the live object, and the registry Component', async ({ page }) => {
  await signInAs(page, 'ada', '/services/payments');
  await page.getByTestId('tab-config').click();
  await openConfig(page, 'payments');

  for (const [env, file] of [['dev', DEV_RELEASE], ['prod', PROD_RELEASE]]) {
    const resource = release(page, env);
    await expect(resource).toHaveCount(1);
    await expect(resource.getByTestId('intent-path')).toHaveText(file);
    // The last commit that changed it: short sha, message, author.
    await expect(resource.getByTestId('intent-commit')).toHaveAttribute('data-sha', /^[0-9a-f]{7,40}$/);
    await expect(resource.getByTestId('intent-yaml')).toContainText('kind: Release');
    await expect(resource.getByTestId('intent-yaml')).toContainText(`environment: ${env}`);
    // The object on the cluster, without the cluster's bookkeeping.
    const applied = resource.getByTestId('applied-yaml');
    await expect(applied).toContainText('kind: Release');
    await expect(applied).toContainText(`name: payments-${env}`);
    await expect(applied).not.toContainText('managedFields');
    await expect(resource.getByTestId('edit-button')).toBeVisible();
  }
  // Derived files and what runs are folded; what runs names the Application with its state.
  const prod = page.locator('[data-testid="config-env"][data-env="prod"]');
  const application = prod.locator('[data-testid="running-object"][data-kind="Application"]');
  await expect(application).toHaveCount(1);
  await expect(application.getByTestId('running-state')).toHaveAttribute('data-value', /.+/);
  await expect(application.getByTestId('running-yaml')).toBeHidden();
  await application.locator('summary').click();
  await expect(application.getByTestId('running-yaml')).toContainText('kind: Application');

  const registry = page.getByTestId('config-registry').getByTestId('config-resource');
  await expect(registry).toHaveAttribute('data-kind', 'Component');
  await expect(registry.getByTestId('intent-path')).toHaveText('platform/registry/payments.yaml');
  await expect(page.getByTestId('permission-reason')).toHaveCount(0);

  // The picker's environment narrows the tab to it.
  await page.locator('[data-testid="env-option"][data-env="dev"]').click();
  await expect(page).toHaveURL(/tab=config&env=dev/);
  await expect(page.getByTestId('config-env')).toHaveCount(1);
  await expect(page.getByTestId('config-env')).toHaveAttribute('data-env', 'dev');
  await expectAccessible(page, 'the Config tab');
});

test('the editor finds an unknown field as it is typed, sends nothing, then previews a fix and opens its PR', async ({ page }) => {
  test.setTimeout(60_000);
  const sent: string[] = [];
  page.on('request', (request) => {
    if (/\/config\/(preview|submit)/.test(request.url())) sent.push(`${request.method()} ${request.url()}`);
  });
  await signInAs(page, 'ada', '/services/payments?tab=config&env=prod');
  await openConfig(page, 'payments', '&env=prod');
  const resource = release(page, 'prod');
  await resource.getByTestId('edit-button').click();
  const editor = resource.getByTestId('yaml-editor');
  const input = editor.getByTestId('yaml-input');
  await expect(input).toBeFocused();
  const original = await input.inputValue();
  expect(original).toContain('autoDeploy: false');
  await expect(editor.getByTestId('diagnostics-ok')).toBeVisible();
  // Unchanged: nothing to preview yet.
  await expect(editor.getByTestId('preview-button')).toBeDisabled();

  // Type `  replicas: 3` as the first line under `spec:`: Tab inserts two spaces.
  const lines = original.split('\n');
  const specIndex = lines.indexOf('spec:');
  expect(specIndex).toBeGreaterThan(0);
  const offset = lines.slice(0, specIndex + 1).join('\n').length + 1;
  await input.evaluate((el: HTMLTextAreaElement, at: number) => el.setSelectionRange(at, at), offset);
  await page.keyboard.press('Tab');
  await page.keyboard.type('replicas: 3\n');
  expect(await input.inputValue()).toContain('spec:\n  replicas: 3\n  component: payments');

  const errorLine = specIndex + 2;
  const marked = editor.locator('[data-testid="gutter-line"][data-error="true"]');
  await expect(marked).toHaveCount(1);
  await expect(marked).toHaveText(String(errorLine));
  const problem = editor.getByTestId('diagnostic');
  await expect(problem).toHaveCount(1);
  await expect(problem).toHaveAttribute('data-field', 'spec.replicas');
  await expect(problem).toHaveAttribute('data-line', String(errorLine));
  await expect(problem).toHaveAttribute('data-column', '3');
  await expect(problem).toContainText(`${errorLine}:3`);
  await expect(problem).toContainText('replicas');
  await expect(editor.getByTestId('preview-button')).toBeDisabled();
  await expect(input).toHaveAttribute('aria-invalid', 'true');

  // Escape leaves the text for the problem; choosing it puts the caret on the field.
  await input.focus();
  await page.keyboard.press('Escape');
  await expect(problem).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(input).toBeFocused();
  const caret = await input.evaluate((el: HTMLTextAreaElement) => el.selectionStart);
  expect(caret).toBe(lines.slice(0, specIndex + 1).join('\n').length + 1 + 2);
  // Ctrl+Enter does not preview a file with problems.
  await page.keyboard.press('Control+Enter');
  await expectAccessible(page, 'the Config editor showing a problem');
  expect(sent, 'requests sent while typing').toEqual([]);

  // The fix: autoDeploy turned on instead.
  await input.fill(original.replace('autoDeploy: false', 'autoDeploy: true'));
  await expect(editor.getByTestId('diagnostics-ok')).toBeVisible();
  await expect(editor.locator('[data-testid="gutter-line"][data-error="true"]')).toHaveCount(0);
  await expect(editor.getByTestId('submit-button')).toBeDisabled();
  expect(sent).toEqual([]);
  await input.focus();
  await page.keyboard.press('Control+Enter');
  await expect(editor.getByTestId('preview-file')).toHaveCount(1, { timeout: 15_000 });
  await expect(editor.getByTestId('preview-file')).toHaveAttribute('data-path', PROD_RELEASE);
  const diff = editor.getByTestId('diff');
  await expect(diff).toContainText('-  autoDeploy: false');
  await expect(diff).toContainText('+  autoDeploy: true');
  expect(sent.filter((s) => s.includes('/config/preview'))).toHaveLength(1);

  await editor.getByTestId('submit-button').click();
  const link = editor.getByTestId('pr-link');
  await expect(link).toBeVisible({ timeout: 15_000 });
  const number = Number((await link.textContent())!.replace('#', ''));
  expect(number).toBeGreaterThan(0);
  await expect(editor.getByTestId('pr-outcome')).toContainText('opened PR');

  const pulls = await page.request.get('/api/v1/services/payments/pulls');
  expect(pulls.ok()).toBeTruthy();
  const mine = (await pulls.json()).find((pr: { number: number }) => pr.number === number);
  expect(mine, `PR #${number} among payments' pulls`).toBeTruthy();
  expect(mine.branch).toBe('tower/config/payments/prod/payments-release');

  // The same edit again updates the same PR (200, reused).
  await editor.getByTestId('preview-button').click();
  await expect(editor.getByTestId('preview-file')).toHaveCount(1, { timeout: 15_000 });
  await editor.getByTestId('submit-button').click();
  await expect(editor.getByTestId('pr-reused')).toBeVisible({ timeout: 15_000 });
  await expect(editor.getByTestId('pr-link')).toHaveText(`#${number}`);
});

test('a guest sees the YAML but no editor, and a direct submit is refused with 403', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=config');
  await openConfig(page, 'payments');
  await expect(release(page, 'prod').getByTestId('intent-yaml')).toContainText('kind: Release');
  await expect(page.getByTestId('edit-button')).toHaveCount(0);
  await expect(page.getByTestId('yaml-editor')).toHaveCount(0);
  await expect(page.getByTestId('yaml-input')).toHaveCount(0);
  await expect(page.getByTestId('permission-reason')).toContainText('Owners of payments');

  const refused = await page.request.post('/api/v1/services/payments/config/submit', {
    headers: { 'x-tower-csrf': '1' },
    data: { path: PROD_RELEASE, content: 'kind: Release\n' },
  });
  expect(refused.status()).toBe(403);
  expect((await refused.json()).code).toBe('forbidden');
});

test('cart\'s prod Release shows as drifted, naming spec.autoDeploy, with the diff', async ({ page }) => {
  await signInAsGuest(page, '/services/cart?tab=config&env=prod');
  await openConfig(page, 'cart', '&env=prod');
  const resource = release(page, 'prod');
  await expect(resource).toHaveAttribute('data-drifted', 'true');
  const chip = resource.getByTestId('drift-chip');
  await expect(chip).toContainText('Drifted');
  await expect(chip).toContainText('spec.autoDeploy');
  await expect(chip).toHaveAttribute('data-fields', 'spec.autoDeploy');
  const diff = resource.getByTestId('drift-diff').getByTestId('diff');
  await expect(diff).toContainText('-autoDeploy: false');
  await expect(diff).toContainText('+autoDeploy: true');
  // payments' Releases do not drift.
  await page.goto('/services/payments?tab=config');
  await expect(page.getByTestId('config-env').first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('drift-chip')).toHaveCount(0);
});

test('the tab shows a skeleton while it loads and says so when the load fails', async ({ page }) => {
  await signInAsGuest(page, '/services/payments');
  const release = await hold(page, '**/api/v1/services/payments/config');
  await page.getByTestId('tab-config').click();
  await expect(page.getByTestId('config-tab').getByTestId('loading')).toBeVisible();
  release();
  await expect(page.getByTestId('config-env').first()).toBeVisible({ timeout: 15_000 });
  await expect(page.getByTestId('config-tab').getByTestId('loading')).toHaveCount(0);

  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await failWith503(page, '**/api/v1/services/payments/config');
  await page.reload();
  await expect(page.getByTestId('config-tab').getByTestId('error')).toContainText('Tower answered 503', { timeout: 15_000 });
  await expect(page.getByTestId('config-env')).toHaveCount(0);
  // The rest of the page keeps working.
  await expect(page.getByTestId('service-header')).toBeVisible();
});

interface Case {
  path: string;
  text: string;
  rules: unknown;
  expected: unknown[];
}

test('the validator compiled to wasm answers exactly as the native one over the corpus', async ({ page }) => {
  const corpus: Case[] = JSON.parse(
    fs.readFileSync(path.resolve(__dirname, '../../shared/tests/config_corpus.json'), 'utf8'),
  );
  expect(corpus.length).toBeGreaterThan(0);
  await signInAsGuest(page, '/services/payments?tab=config');
  await openConfig(page, 'payments');
  await page.waitForFunction(() => typeof (window as any).__towerValidateConfig === 'function');
  const answers: unknown[][] = await page.evaluate(
    (cases) => cases.map((c) => JSON.parse((window as any).__towerValidateConfig(c.path, c.text, JSON.stringify(c.rules)))),
    corpus,
  );
  corpus.forEach((c, i) => {
    expect(answers[i], `case ${i}: ${c.path}\n${c.text}`).toEqual(c.expected);
  });
});
