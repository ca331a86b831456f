import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expectAccessible, failWith503, hold } from './axe';
import { signInAs, signInAsGuest, card } from './session';

// Runs last (by name): its many page loads age the sandbox, whose fixtures the other specs expect fresh.
// Every route of the SPA, in each state it can be in, checked with axe-core against WCAG 2.0/2.1 A and AA.
// The table is keyed by the route pattern exactly as `path!("…")` spells it in the app ("*" is the not-found
// fallback); the last test fails when a route has no entry, so a new page is checked from its first commit.

type Who = 'nobody' | 'guest' | 'ada' | 'linus';

interface State {
  /** What the state is, for the test title. */
  name: string;
  who: Who;
  /** Brings the page into the state, signed in as `who` already, and waits until it shows. */
  reach: (page: Page) => Promise<void>;
}

const visible = (page: Page, testid: string) => expect(page.getByTestId(testid).first()).toBeVisible({ timeout: 15_000 });

/** The fleet list and its event stream held: every page that needs the fleet shows its skeleton. */
async function fleetLoading(page: Page, url: string) {
  const releases = [await hold(page, '**/api/v1/services'), await hold(page, '**/api/v1/events')];
  await page.goto(url);
  await visible(page, 'loading');
  return () => releases.forEach((release) => release());
}

async function openMoveDialog(page: Page, env: 'dev' | 'prod') {
  await page.goto('/services/payments');
  await card(page, env).getByTestId(env === 'dev' ? 'promote-button' : 'rollback-button').click();
  await expect(page.getByTestId('move-dialog').getByTestId('preview-files')).toBeVisible({ timeout: 15_000 });
}

/** The page of the newest run `filter` lists (`status=failed`, say) whose `test` task still has its pod (failed,
 * when `failed`); with `readable`, one whose `unit` step log the signed-in user may read. `undefined` if none. */
async function runPath(page: Page, filter: string, failed: boolean, readable: boolean): Promise<string | undefined> {
  let path = `/api/v1/pipelines?${filter}`;
  for (let pages = 0; pages < 10; pages += 1) {
    const { runs, next } = await (await page.request.get(path)).json();
    for (const run of runs) {
      const detail = await (await page.request.get(`/api/v1/pipelines/${run.namespace}/${run.name}`)).json();
      const test = detail.tasks.some((t: any) => t.name === 'test' && t.pod && (!failed || t.status === 'failed'));
      const log = `/api/v1/services/${run.service}/pipelines/${run.namespace}/${run.name}/tasks/test/steps/unit/log.txt`;
      if (test && (!readable || (detail.can_read_logs && (await page.request.get(log)).ok()))) return `/pipelines/${run.namespace}/${run.name}`;
    }
    if (!next) break;
    path = `/api/v1/pipelines?${filter}&cursor=${next}`;
  }
  return undefined;
}

/** The page of the newest failed run with a failing `test` step whose pod still exists. */
async function failedRunPath(page: Page): Promise<string> {
  const found = await runPath(page, 'status=failed', true, false);
  if (!found) throw new Error('no failed run with its pod');
  return found;
}

/** A run whose `unit` step log the signed-in owner may read: a failed one if any still has its pod (the
 * demo's pushes age older runs' pods out, so after a long suite there may be none), else the newest. */
async function ownersRunPath(page: Page): Promise<string> {
  const found = (await runPath(page, 'status=failed', true, true)) ?? (await runPath(page, '', false, true));
  if (!found) throw new Error('no run whose log the owner may read');
  return found;
}

const CHECKS: Record<string, State[]> = {
  '/': [
    { name: 'loaded, guest', who: 'guest', reach: async (page) => { await page.goto('/'); await visible(page, 'fleet-table'); } },
    { name: 'loaded, owner', who: 'ada', reach: async (page) => { await page.goto('/'); await visible(page, 'fleet-table'); } },
    {
      name: 'the catalog\'s services not onboarded, and the problem chips', who: 'guest',
      reach: async (page) => { await page.goto('/'); await visible(page, 'not-onboarded'); await visible(page, 'chip-problem'); },
    },
    { name: 'filtered by a problem', who: 'guest', reach: async (page) => { await page.goto('/?status=stale-secret'); await visible(page, 'service-row'); } },
    { name: 'sorted by error budget, SLO column', who: 'guest', reach: async (page) => { await page.goto('/?sort=budget'); await expect(page.locator('[data-testid="slo-cell"][data-burning="true"]').first()).toBeVisible({ timeout: 20_000 }); } },
    {
      name: 'loading skeleton', who: 'guest',
      reach: async (page) => { await fleetLoading(page, '/'); },
    },
    {
      name: 'empty: a search matching nothing', who: 'guest',
      reach: async (page) => { await page.goto('/?q=no-service-is-called-this'); await expect(page.getByTestId('fleet-table')).toHaveCount(0); await expect(page.locator('.empty').first()).toBeVisible(); },
    },
    {
      name: 'error: the fleet could not be loaded', who: 'guest',
      reach: async (page) => {
        await failWith503(page, '**/api/v1/services');
        await page.route('**/api/v1/events', (route) => route.abort());
        await page.goto('/');
        await visible(page, 'error');
      },
    },
  ],
  '/sign-in': [
    { name: 'signed out', who: 'nobody', reach: async (page) => { await page.goto('/sign-in'); await visible(page, 'sign-in-github'); } },
    {
      name: 'signed out, refused sign-in', who: 'nobody',
      reach: async (page) => { await page.goto('/sign-in?error=GitHub%20refused%20the%20sign-in'); await visible(page, 'sign-in-error'); },
    },
    {
      name: 'session loading', who: 'nobody',
      reach: async (page) => { await hold(page, '**/api/v1/session'); await page.goto('/sign-in'); await expect(page.locator('.splash')).toBeVisible(); },
    },
    { name: 'signed in as guest (shows the Overview)', who: 'guest', reach: async (page) => { await page.goto('/sign-in'); await visible(page, 'fleet-table'); } },
  ],
  '/services/:name': [
    { name: 'deployments, guest', who: 'guest', reach: async (page) => { await page.goto('/services/payments'); await expect(page.getByTestId('deployment-card')).toHaveCount(2, { timeout: 15_000 }); } },
    { name: 'deployments, owner', who: 'ada', reach: async (page) => { await page.goto('/services/payments'); await visible(page, 'promote-button'); } },
    { name: 'one environment', who: 'guest', reach: async (page) => { await page.goto('/services/payments?env=dev'); await expect(page.getByTestId('deployment-card')).toHaveCount(1, { timeout: 15_000 }); } },
    {
      name: 'a crash-looping service with problems', who: 'guest',
      reach: async (page) => { await page.goto('/services/recommendations'); await expect(page.getByTestId('deployment-card')).toHaveCount(2, { timeout: 15_000 }); },
    },
    {
      name: 'empty: an environment it does not run in', who: 'guest',
      reach: async (page) => { await page.goto('/services/payments?env=nowhere'); await visible(page, 'no-deployments'); },
    },
    { name: 'a service only the catalog knows, its team', who: 'linus', reach: async (page) => { await page.goto('/services/typeahead'); await visible(page, 'onboard-button'); } },
    { name: 'a service only the catalog knows, guest', who: 'guest', reach: async (page) => { await page.goto('/services/typeahead'); await visible(page, 'not-onboarded-notice'); } },
    { name: 'a service without catalog-info.yaml', who: 'guest', reach: async (page) => { await page.goto('/services/ledger'); await visible(page, 'catalog-missing'); } },
    { name: 'dependencies tab', who: 'guest', reach: async (page) => { await page.goto('/services/payments?tab=dependencies'); await visible(page, 'dependency-node'); } },
    {
      name: 'metrics tab, guest', who: 'guest',
      reach: async (page) => { await page.goto('/services/payments?tab=metrics&env=prod&range=6h'); await expect(page.getByTestId('metric-chart')).toHaveCount(8, { timeout: 15_000 }); await visible(page, 'deploy-marker'); },
    },
    {
      name: 'metrics tab, owner', who: 'ada',
      reach: async (page) => { await page.goto('/services/payments?tab=metrics&env=prod'); await expect(page.getByTestId('metric-chart')).toHaveCount(8, { timeout: 15_000 }); await expect(page.locator('path.series').first()).toHaveAttribute('d', /L/); },
    },
    {
      name: 'SLO panel, burning objective', who: 'guest',
      reach: async (page) => { await page.goto('/services/payments?tab=metrics&env=prod'); await expect(page.locator('[data-testid="slo"][data-burning="true"]').first()).toBeVisible({ timeout: 20_000 }); await visible(page, 'alert-row'); },
    },
    {
      name: 'SLO panel, no objectives', who: 'guest',
      reach: async (page) => { await page.goto('/services/recommendations?tab=metrics'); await visible(page, 'slo-empty'); },
    },
    {
      name: 'SLO panel loading', who: 'guest',
      reach: async (page) => { await hold(page, '**/api/v1/services/payments/slos'); await page.goto('/services/payments?tab=metrics&env=prod'); await visible(page, 'service-header'); await expect(page.locator('[aria-label="Loading service level objectives"]')).toBeVisible({ timeout: 15_000 }); },
    },
    {
      name: 'metrics tab loading', who: 'guest',
      reach: async (page) => { await hold(page, /\/metrics\?/); await page.goto('/services/payments?tab=metrics&env=prod'); await visible(page, 'service-header'); await expect(page.locator('[aria-label="Loading metrics"]')).toBeVisible({ timeout: 15_000 }); },
    },
    { name: 'pipelines tab, guest', who: 'guest', reach: async (page) => { await page.goto('/services/payments?tab=pipelines'); await visible(page, 'run-row'); } },
    { name: 'databases tab, guest', who: 'guest', reach: async (page) => { await page.goto('/services/payments?tab=databases'); await visible(page, 'database-row'); } },
    { name: 'databases tab, owner', who: 'ada', reach: async (page) => { await page.goto('/services/payments?tab=databases'); await visible(page, 'database-row'); } },
    { name: 'loading skeleton (fleet)', who: 'guest', reach: async (page) => { await fleetLoading(page, '/services/payments'); } },
    {
      name: 'loading skeleton (deployments)', who: 'guest',
      reach: async (page) => { await hold(page, '**/api/v1/services/payments'); await page.goto('/services/payments'); await visible(page, 'service-header'); await visible(page, 'loading'); },
    },
    {
      name: 'error: the deployments could not be loaded', who: 'guest',
      reach: async (page) => { await failWith503(page, '**/api/v1/services/payments'); await page.goto('/services/payments'); await visible(page, 'error'); },
    },
    { name: 'error: an unknown service', who: 'guest', reach: async (page) => { await page.goto('/services/no-such-service'); await visible(page, 'service-missing'); } },
    { name: 'Promote dialog open', who: 'ada', reach: (page) => openMoveDialog(page, 'dev') },
    { name: 'Rollback dialog open', who: 'ada', reach: (page) => openMoveDialog(page, 'prod') },
    {
      name: 'force sync asking to confirm', who: 'ada',
      reach: async (page) => { await page.goto('/services/payments'); await card(page, 'dev').getByTestId('force-sync-button').click(); await visible(page, 'force-sync-confirm'); },
    },
    {
      name: 'log panel open', who: 'ada',
      reach: async (page) => {
        await page.goto('/services/payments');
        await card(page, 'dev').getByTestId('logs-button').click();
        await expect(page.getByTestId('log-line').first()).toBeVisible({ timeout: 15_000 });
      },
    },
  ],
  '/create': [
    { name: 'the golden paths, guest', who: 'guest', reach: async (page) => { await page.goto('/create'); await visible(page, 'template-onboard-service'); } },
    { name: 'a template refused to a guest', who: 'guest', reach: async (page) => { await page.goto('/create?template=onboard-service'); await visible(page, 'permission-reason'); } },
    { name: 'a template form, owner', who: 'ada', reach: async (page) => { await page.goto('/create?template=onboard-service'); await visible(page, 'template-form'); } },
    {
      name: 'a field refused', who: 'ada',
      reach: async (page) => {
        await page.goto('/create?template=onboard-service');
        await page.getByTestId('field-name').fill('A B');
        await page.getByTestId('preview-button').click();
        await visible(page, 'field-error-name');
      },
    },
    {
      name: 'golden-path preview shown', who: 'ada',
      reach: async (page) => {
        await page.goto('/create?template=onboard-service');
        await page.getByTestId('field-name').fill('inventory');
        await page.getByTestId('field-owner').selectOption('payments');
        await page.getByTestId('field-description').fill('Counts what is on the shelves');
        await page.getByTestId('preview-button').click();
        await visible(page, 'diff');
      },
    },
    { name: 'choose a service', who: 'ada', reach: async (page) => { await page.goto('/create?template=add-database'); await visible(page, 'choose-service'); } },
  ],
  '/releases': [
    { name: "every service's records, guest", who: 'guest', reach: async (page) => { await page.goto('/releases'); await visible(page, 'release-service'); } },
    { name: 'records, guest', who: 'guest', reach: async (page) => { await page.goto('/releases?service=payments&environment=prod'); await visible(page, 'release-row'); } },
    {
      name: 'empty: no records yet', who: 'guest',
      reach: async (page) => {
        await page.route(/\/api\/v1\/releases\?/, (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"records":[],"next_cursor":null}' }));
        await page.goto('/releases?service=payments&environment=prod');
        await visible(page, 'no-releases');
      },
    },
    { name: 'error: an unknown environment', who: 'guest', reach: async (page) => { await page.goto('/releases?service=payments&environment=nowhere'); await visible(page, 'error'); } },
    {
      name: 'loading', who: 'guest',
      reach: async (page) => { await hold(page, /\/api\/v1\/releases\?/); await page.goto('/releases?service=payments&environment=prod'); await visible(page, 'loading'); },
    },
    {
      name: 'error', who: 'guest',
      reach: async (page) => { await failWith503(page, /\/api\/v1\/releases\?/); await page.goto('/releases?service=payments&environment=prod'); await visible(page, 'error'); },
    },
  ],
  '/releases/:sha': [
    {
      name: 'a dev record, owner (offers Promote)', who: 'ada',
      reach: async (page) => {
        await page.goto('/releases?service=payments&environment=dev');
        await page.getByTestId('release-row').first().locator('a').first().click();
        await visible(page, 'release-detail');
      },
    },
    {
      name: 'a prod record, guest', who: 'guest',
      reach: async (page) => {
        await page.goto('/releases?service=payments&environment=prod');
        await page.getByTestId('release-row').first().locator('a').first().click();
        await visible(page, 'release-detail');
      },
    },
    { name: 'error: an unknown record', who: 'guest', reach: async (page) => { await page.goto('/releases/0000000deadbeef'); await visible(page, 'error'); } },
  ],
  '/pipelines': [
    { name: 'every run, guest', who: 'guest', reach: async (page) => { await page.goto('/pipelines'); await visible(page, 'run-row'); } },
    {
      name: 'filtered to nothing', who: 'guest',
      reach: async (page) => { await page.goto('/pipelines?status=cancelled&revision=no-such-branch'); await visible(page, 'no-runs'); },
    },
    {
      name: 'loading', who: 'guest',
      reach: async (page) => { await hold(page, /\/api\/v1\/pipelines(\?|$)/); await page.goto('/pipelines'); await visible(page, 'loading'); },
    },
    {
      name: 'error', who: 'guest',
      reach: async (page) => { await failWith503(page, /\/api\/v1\/pipelines(\?|$)/); await page.goto('/pipelines'); await visible(page, 'error'); },
    },
  ],
  '/pipelines/:namespace/:name': [
    {
      name: 'a failed run with its failed task open, guest (its log owner-only)', who: 'guest',
      reach: async (page) => {
        await page.goto(`${await failedRunPath(page)}?task=test&step=unit`);
        await visible(page, 'task-panel');
        await visible(page, 'log-forbidden');
      },
    },
    {
      name: 'the owner searching a step log', who: 'ada',
      reach: async (page) => {
        await page.goto(`${await ownersRunPath(page)}?task=test&step=unit#L2`);
        await visible(page, 'log-line');
        await page.getByTestId('log-search').fill('test');
        await expect(page.getByTestId('log-match-count')).toHaveText(/of/);
      },
    },
    {
      name: 'loading', who: 'guest',
      reach: async (page) => { await hold(page, '**/api/v1/pipelines/tekton-ci/*'); await page.goto('/pipelines/tekton-ci/any-run'); await visible(page, 'loading'); },
    },
    { name: 'error: no such run', who: 'guest', reach: async (page) => { await page.goto('/pipelines/tekton-ci/no-such-run'); await visible(page, 'error'); } },
  ],
  '/prs': [
    { name: 'the list, guest', who: 'guest', reach: async (page) => { await page.goto('/prs'); await expect(page.locator('[data-testid="pr-row"], [data-testid="no-prs"]').first()).toBeVisible({ timeout: 15_000 }); } },
    {
      name: 'empty', who: 'guest',
      reach: async (page) => {
        await page.route('**/api/v1/pulls', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '[]' }));
        await page.goto('/prs');
        await visible(page, 'no-prs');
      },
    },
    { name: 'loading', who: 'guest', reach: async (page) => { await hold(page, '**/api/v1/pulls'); await page.goto('/prs'); await visible(page, 'loading'); } },
    { name: 'error', who: 'guest', reach: async (page) => { await failWith503(page, '**/api/v1/pulls'); await page.goto('/prs'); await visible(page, 'error'); } },
  ],
  '/databases': [
    { name: 'every database, guest', who: 'guest', reach: async (page) => { await page.goto('/databases'); await visible(page, 'database-check-failed'); } },
    { name: 'one environment', who: 'guest', reach: async (page) => { await page.goto('/databases?env=prod'); await visible(page, 'database-row'); } },
    {
      name: 'empty', who: 'guest',
      reach: async (page) => {
        await page.route('**/api/v1/databases', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '[]' }));
        await page.goto('/databases');
        await visible(page, 'no-databases');
      },
    },
    { name: 'loading', who: 'guest', reach: async (page) => { await hold(page, '**/api/v1/databases'); await page.goto('/databases'); await visible(page, 'loading'); } },
    { name: 'error', who: 'guest', reach: async (page) => { await failWith503(page, '**/api/v1/databases'); await page.goto('/databases'); await visible(page, 'error'); } },
  ],
  '/databases/:env/:name': [
    { name: 'a failed check, its owner (the error text)', who: 'linus', reach: async (page) => { await page.goto('/databases/dev/catalog'); await visible(page, 'database-error'); } },
    { name: 'a failed check, guest (the text hidden)', who: 'guest', reach: async (page) => { await page.goto('/databases/dev/catalog'); await visible(page, 'database-error-hidden'); } },
    { name: 'behind the code, with its history', who: 'guest', reach: async (page) => { await page.goto('/databases/prod/payments'); await visible(page, 'database-detail'); } },
    { name: 'loading', who: 'guest', reach: async (page) => { await hold(page, '**/api/v1/databases/dev/catalog'); await page.goto('/databases/dev/catalog'); await visible(page, 'loading'); } },
    { name: 'error: no such database', who: 'guest', reach: async (page) => { await page.goto('/databases/prod/no-such-database'); await visible(page, 'error'); } },
  ],
  '/platform': [
    { name: 'every section, guest', who: 'guest', reach: async (page) => { await page.goto('/platform'); await visible(page, 'platform-matrix'); await visible(page, 'application-set'); await visible(page, 'cluster'); await visible(page, 'setting'); } },
    { name: 'components only', who: 'guest', reach: async (page) => { await page.goto('/platform?section=components'); await visible(page, 'platform-matrix'); } },
    {
      name: 'settings filtered to nothing', who: 'guest',
      reach: async (page) => { await page.goto('/platform?section=settings&q=no-such-key'); await visible(page, 'no-matching-settings'); },
    },
    { name: 'loading', who: 'guest', reach: async (page) => { await hold(page, '**/api/v1/platform'); await page.goto('/platform?section=components'); await visible(page, 'loading'); } },
    { name: 'error', who: 'guest', reach: async (page) => { await failWith503(page, '**/api/v1/platform'); await page.goto('/platform?section=components'); await visible(page, 'error'); } },
    { name: 'error in the configuration', who: 'guest', reach: async (page) => { await failWith503(page, '**/api/v1/config'); await page.goto('/platform?section=clusters'); await visible(page, 'error'); } },
  ],
  '/config': [
    { name: 'the old address opens the Platform page', who: 'guest', reach: async (page) => { await page.goto('/config?section=clusters'); await expect(page).toHaveURL(/\/platform\?section=clusters$/); await visible(page, 'cluster'); } },
  ],
  '*': [
    { name: 'an unknown address', who: 'guest', reach: async (page) => { await page.goto('/no/such/page'); await visible(page, 'not-found'); } },
  ],
};

for (const [route, states] of Object.entries(CHECKS)) {
  for (const state of states) {
    test(`axe: ${route} — ${state.name}`, async ({ page }) => {
      if (state.who === 'guest') await signInAsGuest(page);
      if (state.who === 'ada') await signInAs(page, 'ada');
      if (state.who === 'linus') await signInAs(page, 'linus');
      await state.reach(page);
      await expectAccessible(page, `${route} (${state.name})`);
      await page.unrouteAll({ behavior: 'ignoreErrors' });
    });
  }
}

/** Every `path!("…")` route the app declares, wherever in `app/src` it is declared. */
function appRoutes(): string[] {
  const src = path.resolve(__dirname, '../../app/src');
  const files = fs.readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.rs'));
  const routes = files.flatMap((file) =>
    [...fs.readFileSync(path.join(src, file), 'utf8').matchAll(/path!\(\s*"([^"]*)"\s*\)/g)].map((m) => m[1]),
  );
  return [...new Set(routes)].sort();
}

test('every route of the app has an axe check, and every check a route', () => {
  const routes = appRoutes();
  // A sanity floor: a broken pattern that finds nothing must not pass as "nothing to check".
  expect(routes).toContain('/services/:name');
  expect(Object.keys(CHECKS).sort()).toEqual([...routes, '*'].sort());
  for (const [route, states] of Object.entries(CHECKS)) {
    expect(states.length, `${route} has no states checked`).toBeGreaterThan(0);
  }
});
