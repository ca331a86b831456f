import { test, expect, type Page } from '@playwright/test';
import { signInAsGuest } from './session';

// The Metrics tab against the sandbox's Prometheus: eight fixed charts of payments in prod, with every deploy
// Argo CD remembers marked on each. The sandbox's metrics hold six hours of history, and payments' last prod
// deploy (the one that went bad) happened about 3 h 41 min before the sandbox started: so the deploy marker is
// checked over 6 hours, where it falls; the last hour has none.

const QUERIES = [
  'request_rate', 'error_ratio', 'latency_p50', 'latency_p95', 'latency_p99', 'cpu', 'memory', 'restarts',
];

const charts = (page: Page) => page.getByTestId('metric-chart');
const chart = (page: Page, query: string) => page.locator(`[data-testid="metric-chart"][data-query="${query}"]`);

/** The first time label of the request rate chart, once it is drawn. */
async function firstTimeLabel(page: Page): Promise<string> {
  const label = chart(page, 'request_rate').locator('.x-axis span').first();
  await expect(label).toHaveText(/^\d\d:\d\d$|^[A-Z][a-z]{2} \d+$/, { timeout: 15_000 });
  return (await label.textContent()) ?? '';
}

test('a guest sees all eight charts of payments in prod with the deploy marked on each', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod&range=6h');
  await expect(charts(page)).toHaveCount(8, { timeout: 15_000 });
  await expect(page.getByTestId('metrics-range-6h')).toHaveAttribute('aria-current', 'true');
  await expect(page.getByTestId('metrics-range-1h')).not.toHaveAttribute('aria-current', /.*/);
  for (const query of QUERIES) {
    const card = chart(page, query);
    // A line with points: a move and at least one segment.
    await expect(card.locator('path.series').first()).toHaveAttribute('d', /^M[\d.]+,[\d.]+.*L[\d.]+,[\d.]+/, { timeout: 15_000 });
    await expect(card.getByTestId('deploy-marker').first()).toBeVisible();
    await expect(card.getByTestId('chart-error')).toHaveCount(0);
    // Units are always shown: the axis labels carry them (restarts are plain counts).
    if (query !== 'restarts') await expect(card.locator('.y-axis span').last()).toHaveText(/\d ?(req\/s|%|µs|ms|s|m|cores?|B|KiB|MiB|GiB)$/);
    await expect(card.locator('[role="img"]')).toHaveAttribute('aria-label', /, last 6 hours, latest .*1 deploy|, last 6 hours, latest .*deploys/);
  }
  // The marker names its version and when it was deployed.
  const marker = chart(page, 'error_ratio').getByTestId('deploy-marker').first();
  const version = await marker.getAttribute('data-version');
  expect(version).toMatch(/^[0-9a-f]{7}$/);
  await expect(marker.locator('title')).toHaveText(new RegExp(`^deployed ${version} at \\d\\d:\\d\\d UTC$`));
});

test('picking a range puts it in the URL and redraws the charts over it', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod');
  await expect(charts(page)).toHaveCount(8, { timeout: 15_000 });
  await expect(page.getByTestId('metrics-range-1h')).toHaveAttribute('aria-current', 'true');
  const hourly = await firstTimeLabel(page);

  await page.getByTestId('metrics-range-6h').click();
  await expect(page).toHaveURL(/[?&]range=6h(&|$)/);
  // The tab and the environment stay in the URL.
  await expect(page).toHaveURL(/[?&]tab=metrics(&|$)/);
  await expect(page).toHaveURL(/[?&]env=prod(&|$)/);
  await expect(page.getByTestId('metrics-range-6h')).toHaveAttribute('aria-current', 'true');
  await expect(chart(page, 'request_rate').locator('[role="img"]')).toHaveAttribute('aria-label', /last 6 hours/, { timeout: 15_000 });
  await expect.poll(() => firstTimeLabel(page)).not.toBe(hourly);

  // Another environment keeps the range.
  await page.locator('[data-testid="env-option"][data-env="dev"]').click();
  await expect(page).toHaveURL(/[?&]env=dev(&|$)/);
  await expect(page).toHaveURL(/[?&]range=6h(&|$)/);
  await expect(page.getByTestId('metrics-about')).toContainText('payments in dev');
});

test('a keyboard user focuses a chart and reads its values with the arrow keys', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod');
  const card = chart(page, 'request_rate');
  const plot = card.locator('[role="img"]');
  await expect(card.locator('path.series').first()).toHaveAttribute('d', /L/, { timeout: 15_000 });
  await expect(card.getByTestId('chart-readout')).toHaveCount(0);

  await plot.focus();
  await page.keyboard.press('ArrowLeft');
  const readout = card.getByTestId('chart-readout');
  await expect(readout).toBeVisible();
  await expect(readout).toHaveText(/^\d\d:\d\d UTC · [\d.]+k? req\/s/);
  const first = await readout.textContent();
  // Two steps back: the chart's window moves on by one step when a new step's answer arrives, which can land
  // between two key presses and bring the same point back under a single step's index.
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  await expect(readout).not.toHaveText(first ?? '');
  await page.keyboard.press('Escape');
  await expect(readout).toHaveCount(0);
});

test('the pointer over a chart shows the nearest point', async ({ page }) => {
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod');
  const card = chart(page, 'latency_p95');
  await expect(card.locator('path.series').first()).toHaveAttribute('d', /L/, { timeout: 15_000 });
  await card.locator('.plot').hover({ position: { x: 40, y: 40 } });
  await expect(card.getByTestId('chart-readout')).toHaveText(/^\d\d:\d\d UTC · [\d.]+ (µs|ms|s)/);
});

/** A Metrics answer shaped as the server sends it, with every chart but the first two drawn. */
function fakeView() {
  const end = Math.floor(Date.now() / 1000 / 15) * 15;
  const start = end - 239 * 15;
  const points = Array.from({ length: 240 }, (_, i) => [start + i * 15, 1 + (i % 7) / 10]);
  return {
    service: 'payments',
    environment: 'prod',
    range: '1h',
    start,
    end,
    step: 15,
    charts: QUERIES.map((query, index) => ({
      query,
      series: index < 2 ? [] : [{ label: query, points }],
      ...(index === 0
        // 5.5 min before `end`: `end` is up to 15 s behind the browser's clock and the page's clock ticks every
        // 15 s, so the age reads "5 min ago" whenever the page draws it (exactly 5 min could read 4).
        ? { error: { message: 'The metrics store is unreachable', since: new Date((end - 330) * 1000).toISOString() } }
        : {}),
    })),
    deploys: [{ at: end - 600, version: 'abc1234', previous: '0ff1ce0' }],
  };
}

test('a failing chart says why and since when, an empty one says there is no data, and the rest still draw', async ({ page }) => {
  await page.route(/\/api\/v1\/services\/payments\/environments\/prod\/metrics\?/, (route) =>
    route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(fakeView()) }));
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod');
  await expect(chart(page, 'request_rate').getByTestId('chart-error'))
    .toHaveText(/The metrics store is unreachable since \d\d:\d\d UTC \(5 min ago\)/, { timeout: 15_000 });
  await expect(chart(page, 'error_ratio').getByTestId('chart-empty'))
    .toHaveText('No data for payments in prod over the last 1 hour.');
  for (const query of QUERIES.slice(2)) {
    await expect(chart(page, query).locator('path.series')).toHaveAttribute('d', /L/);
    await expect(chart(page, query).locator('[data-testid="deploy-marker"][data-version="abc1234"]')).toBeVisible();
  }
  await page.unrouteAll({ behavior: 'ignoreErrors' });
});

test('a Tower without a metrics store says so instead of failing', async ({ page }) => {
  await page.route(/\/api\/v1\/services\/payments\/environments\/prod\/metrics\?/, (route) =>
    route.fulfill({
      status: 404,
      contentType: 'application/json',
      body: JSON.stringify({ code: 'not_found', message: 'Metrics is not configured in this Tower.' }),
    }));
  await signInAsGuest(page, '/services/payments?tab=metrics&env=prod');
  await expect(page.getByTestId('metrics-not-configured')).toHaveText(/^Metrics are not configured in this Tower\./, { timeout: 15_000 });
  await expect(page.getByTestId('error')).toHaveCount(0);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
});
