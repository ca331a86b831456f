import { test, expect, type Page } from '@playwright/test';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { signInAs, card, sandboxUrl } from './session';

// Stored XSS: text that comes from upstream (a repository's catalog-info.yaml, a commit message, a pull
// request's title, a line a pod prints) reaches Tower's pages as text, never as markup and never as terminal
// control. Each payload carries a script element, an image whose error handler would run script, and terminal
// escapes (a colour, a window-title OSC, a clear-screen); a page that treated any of it as HTML would run
// `window.__xss = …` or `alert`, add an `img[src=x]`, or trip the Content-Security-Policy.
//
// The payloads go in the way they would in life: an App installation of the sandbox forge (its GitHub API,
// authenticated with the demo App's TEST-ONLY key) pushes the catalog file and opens the pull request, and the
// sandbox's control endpoint has a pod's container print the line. Those calls use Node's fetch, not a browser
// context, so the tokens they carry are nobody's response but the forge's (see secrets-teardown.ts).

const ORG = 'acme';
const GITOPS = 'application-repositories';
/** The demo App (sandbox/src/forge.rs): its id, installation, and TEST-ONLY private key. */
const APP_ID = 424_242;
const INSTALLATION = 42_424_242;
const PRIVATE_KEY = fs.readFileSync(path.resolve(__dirname, '../../sandbox/src/forge/testdata/demo-app.private.pem'), 'utf8');

/** The hostile text, tagged with where it went so a hit says which way it came in. */
const attack = (where: string) =>
  `xss-${where} <script>window.__xss='${where}'</script>` +
  `<img src=x onerror="window.__xss='${where}-img';alert('${where}')">` +
  ` \u001b[31mred-${where}\u001b[0m \u001b]0;pwned-${where}\u0007\u001b[2J done-${where}`;

/** What of `attack(where)` must be on the page as text, whatever the page does with the escapes. */
const literals = (where: string) => [
  `<script>window.__xss='${where}'</script>`,
  `<img src=x onerror="window.__xss='${where}-img';alert('${where}')">`,
  `red-${where}`,
  `done-${where}`,
];

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/** An App JWT, as the GitHub App's owner would sign it. */
function appJwt(): string {
  const now = Math.floor(Date.now() / 1000);
  const head = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const claims = base64url(JSON.stringify({ iat: now - 30, exp: now + 300, iss: APP_ID }));
  const signature = crypto.createSign('RSA-SHA256').update(`${head}.${claims}`).sign(PRIVATE_KEY);
  return `${head}.${claims}.${base64url(signature)}`;
}

/** The sandbox forge's REST API as the App's installation calls it (Node's fetch: no browser context). */
async function forge() {
  const api = `${sandboxUrl}/github`;
  const minted = await fetch(`${api}/app/installations/${INSTALLATION}/access_tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${appJwt()}`, accept: 'application/vnd.github+json' },
  });
  expect(minted.status, await minted.clone().text()).toBe(201);
  const { token } = await minted.json();
  return async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${api}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/vnd.github+json',
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    expect(response.ok, `${method} ${route}: ${response.status} ${text}`).toBeTruthy();
    return text ? JSON.parse(text) : null;
  };
}

/**
 * Watches `page` for anything the payloads could make happen: a dialog, a CSP violation (reported by the
 * document or on the console). `check()` then asserts none happened and that no payload became a DOM element
 * or ran.
 */
async function watch(page: Page) {
  const dialogs: string[] = [];
  const cspConsole: string[] = [];
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  page.on('console', (message) => {
    if (/content security policy/i.test(message.text())) cspConsole.push(message.text());
  });
  await page.addInitScript(() => {
    const w = window as any;
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      w.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  return async (title: string) => {
    const state = await page.evaluate(() => ({
      xss: (window as any).__xss,
      csp: (window as any).__csp as string[],
      injectedImages: document.querySelectorAll('img[src="x"]').length,
      injectedScripts: [...document.scripts].filter((s) => s.text.includes('__xss')).length,
      title: document.title,
    }));
    // All at once, so a failure names everything that happened.
    expect({
      ran: state.xss ?? null,
      injectedImages: state.injectedImages,
      injectedScripts: state.injectedScripts,
      titleSetByOsc: state.title.includes('pwned'),
      cspViolations: state.csp,
      cspConsoleErrors: cspConsole,
      dialogs,
    }, `${title}: what the payloads did`).toEqual({
      ran: null,
      injectedImages: 0,
      injectedScripts: 0,
      titleSetByOsc: false,
      cspViolations: [],
      cspConsoleErrors: [],
      dialogs: [],
    });
  };
}

async function expectLiterally(scope: ReturnType<Page['locator']>, where: string) {
  for (const literal of literals(where)) await expect(scope).toContainText(literal, { timeout: 20_000 });
}

test('a catalog description from a service repository is shown as text', async ({ page }) => {
  test.setTimeout(90_000);
  const check = await watch(page);
  const api = await forge();
  // typeahead is in the catalog only (no Component), so its description is the one its catalog-info.yaml gives.
  const file = await api('GET', `/repos/${ORG}/typeahead/contents/catalog-info.yaml`);
  const yaml = Buffer.from(file.content, 'base64').toString('utf8');
  expect(yaml).toMatch(/^  description: .*$/m);
  // A JSON string is a YAML double-quoted scalar: the escapes arrive in the parsed description as characters.
  const edited = yaml.replace(/^  description: .*$/m, `  description: ${JSON.stringify(attack('catalog'))}`);
  await api('PUT', `/repos/${ORG}/typeahead/contents/catalog-info.yaml`, {
    message: attack('catalog-commit'),
    content: Buffer.from(edited).toString('base64'),
    sha: file.sha,
  });

  // The push reaches Tower as a webhook; the catalog reads the file again.
  await signInAs(page, 'ada', '/services/typeahead');
  const header = page.getByTestId('service-header');
  await expect(async () => {
    await page.reload();
    await expect(header).toContainText('done-catalog', { timeout: 3_000 });
  }).toPass({ timeout: 30_000 });
  await expectLiterally(header, 'catalog');
  await check('service page');

  await page.goto('/');
  await expectLiterally(page.locator('main'), 'catalog');
  await check('overview');
});

test('a pull request title and its commit message are shown as text, open and merged', async ({ page }) => {
  test.setTimeout(120_000);
  const check = await watch(page);
  const api = await forge();
  const branch = `tower/config/refunds/xss-${Date.now()}`;
  const main = await api('GET', `/repos/${ORG}/${GITOPS}/git/ref/heads/main`);
  await api('POST', `/repos/${ORG}/${GITOPS}/git/refs`, { ref: `refs/heads/${branch}`, sha: main.object.sha });
  const release = 'platform/environments/dev/refunds-release.yaml';
  const file = await api('GET', `/repos/${ORG}/${GITOPS}/contents/${release}?ref=${encodeURIComponent(branch)}`);
  const yaml = Buffer.from(file.content, 'base64').toString('utf8');
  await api('PUT', `/repos/${ORG}/${GITOPS}/contents/${release}`, {
    message: attack('commit'),
    content: Buffer.from(`${yaml.trimEnd()}\n# reviewed\n`).toString('base64'),
    sha: file.sha,
    branch,
  });
  const pr = await api('POST', `/repos/${ORG}/${GITOPS}/pulls`, {
    title: attack('title'),
    head: branch,
    base: 'main',
    body: attack('body'),
  });

  await signInAs(page, 'ada', '/prs');
  const row = page.locator(`[data-testid="pr-row"][data-number="${pr.number}"]`);
  await expect(row).toBeVisible({ timeout: 20_000 });
  await expectLiterally(row, 'title');
  await check('pull requests page');

  // Merged with the commit's own message kept as the record's: the Releases page shows it.
  const merged = await fetch(`${sandboxUrl}/sandbox/pulls/${pr.number}/merge?merger=grace`, { method: 'POST' });
  expect(merged.ok, await merged.text()).toBeTruthy();
  await page.goto('/releases?environment=dev');
  const record = page.locator(`[data-testid="release-row"][data-pr="${pr.number}"]`);
  await expect(async () => {
    await page.reload();
    await expect(record).toBeVisible({ timeout: 3_000 });
  }).toPass({ timeout: 40_000 });
  await expectLiterally(record, 'commit');
  await check('releases page');
  await record.locator('a').first().click();
  await expect(page.getByTestId('release-detail')).toBeVisible();
  await expectLiterally(page.getByTestId('release-detail'), 'commit');
  await check('release detail');
});

test('a line a pod prints is shown as text in the log panel', async ({ page, request }) => {
  test.setTimeout(90_000);
  const check = await watch(page);
  await signInAs(page, 'ada', '/services/refunds?env=dev');
  const detail = await (await page.request.get('/api/v1/services/refunds')).json();
  const dev = detail.cards.find((c: any) => c.environment === 'dev');
  expect(dev.pods.length).toBeGreaterThan(0);
  // Every dev pod prints it, so whichever the panel opens on shows it.
  for (const pod of dev.pods) {
    const cluster = pod.cluster || 'dev';
    const spec = await (await request.get(`${sandboxUrl}/clusters/${cluster}/api/v1/namespaces/refunds/pods/${pod.name}`)).json();
    const printed = await request.post(
      `${sandboxUrl}/sandbox/clusters/${cluster}/namespaces/refunds/pods/${pod.name}/log`,
      { data: { container: spec.spec.containers[0].name, line: attack('log') } },
    );
    expect(printed.status(), await printed.text()).toBe(204);
  }

  await card(page, 'dev').getByTestId('logs-button').click();
  const panel = page.getByTestId('log-panel');
  await expect(panel).toBeVisible();
  const line = panel.locator('[data-testid="log-line"]').filter({ hasText: 'done-log' });
  await expect(line.first()).toBeVisible({ timeout: 20_000 });
  await expectLiterally(line.first(), 'log');
  // The escapes themselves are not left in the text as invisible characters.
  expect(await line.first().textContent()).not.toMatch(/[\u001b\u0007]/);
  // The clear-screen did nothing to the lines around it.
  expect(await panel.locator('[data-testid="log-line"]').count()).toBeGreaterThan(1);
  await check('log panel');
});
