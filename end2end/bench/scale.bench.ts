// The browser half of `cargo xtask bench scale` (run with playwright.bench.config.ts and TOWER_BENCH_URL, against
// a Tower the bench started on a sandbox at `--scale N`): the Overview's first row painted, search to one row,
// clearing the search, a scroll to the last row, what is in the DOM, and the JS heap. The times are taken in the
// page (performance.now(), to the animation frame after the change is in the DOM), so Playwright's own round
// trips are not in them. One JSON line: `{"bench":"scale",…}`.
import { test, expect, type Page } from '@playwright/test';

const services = Number(process.env.TOWER_BENCH_SERVICES ?? 0);
const SAMPLES = 5;

test.skip(!process.env.TOWER_BENCH_URL, 'run by `cargo xtask bench scale`, which starts the Tower it measures');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** What the bench does to the page, and what it then waits for. */
type Step =
  | { kind: 'search'; text: string; until: 'one-row' | 'many-rows' }
  | { kind: 'scroll'; to: 'end' | 'top'; until: string };

/** Milliseconds from doing `step` until what it waits for is in the DOM, to the next animation frame after (the
 * paint). Code running in the page is a function Playwright serializes (the page's CSP forbids building one). */
async function time(page: Page, step: Step): Promise<number> {
  return page.evaluate((step) => new Promise<number>((resolve, reject) => {
    const rows = () => document.querySelectorAll('[data-testid="service-row"]');
    const started = performance.now();
    let done: () => boolean;
    if (step.kind === 'search') {
      const input = document.querySelector('[data-testid="search"]') as HTMLInputElement;
      input.value = step.text;
      input.dispatchEvent(new Event('input', { bubbles: true }));
      done = step.until === 'one-row'
        ? () => rows().length === 1 && rows()[0].getAttribute('data-service') === step.text
        : () => rows().length > 1;
    } else {
      window.scrollTo(0, step.to === 'end' ? document.documentElement.scrollHeight : 0);
      done = () => document.querySelector(`[data-testid="service-row"][data-service="${step.until}"]`) !== null;
    }
    const check = () => {
      if (performance.now() - started > 30_000) reject(new Error(`not done after 30 s: ${JSON.stringify(step)}`));
      else if (done()) requestAnimationFrame(() => resolve(performance.now() - started));
      else requestAnimationFrame(check);
    };
    check();
  }), step);
}

test('the Overview at fleet scale', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('/');
  await page.getByTestId('continue-as-guest').click();
  await expect(page.getByTestId('user-name')).toHaveText('Guest');
  await expect(page.getByTestId('service-row').first()).toBeVisible({ timeout: 60_000 });

  // First row painted, from the navigation's start (the app's code is cached after the first load, as it is for
  // anyone who has opened Tower before).
  const firstRow: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    await page.goto('/', { waitUntil: 'commit' });
    firstRow.push(await page.evaluate(() => new Promise<number>((resolve) => {
      const check = () => {
        if (document.querySelector('[data-testid="service-row"]')) requestAnimationFrame(() => resolve(performance.now()));
        else requestAnimationFrame(check);
      };
      check();
    })));
  }

  // The rows in the Overview's order (by name; `svc-10000` sorts before `svc-1001`), as the list gives them.
  const listed = (await (await page.request.get('/api/v1/services')).json()) as Array<{ name: string; catalog_state: string }>;
  const names = listed.filter((s) => s.catalog_state !== 'not_onboarded').map((s) => s.name).sort();
  expect(names.length).toBeGreaterThanOrEqual(services);
  const last = names[names.length - 1];
  const far = names[names.length - 14];
  const first = (await page.getByTestId('service-row').first().getAttribute('data-service')) ?? '';
  const search: number[] = [];
  const clear: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    search.push(await time(page, { kind: 'search', text: far, until: 'one-row' }));
    clear.push(await time(page, { kind: 'search', text: '', until: 'many-rows' }));
  }
  const scroll: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    scroll.push(await time(page, { kind: 'scroll', to: 'end', until: last }));
    await time(page, { kind: 'scroll', to: 'top', until: first });
  }
  await time(page, { kind: 'scroll', to: 'end', until: last });
  const rowsInDom = await page.getByTestId('service-row').count();
  const domNodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  const session = await page.context().newCDPSession(page);
  await session.send('HeapProfiler.collectGarbage');
  await session.send('Performance.enable');
  const { metrics } = await session.send('Performance.getMetrics');
  const heap = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN;
  const round = (v: number) => Math.round(v * 10) / 10;
  console.log(JSON.stringify({
    bench: 'scale',
    services,
    first_row_ms: round(median(firstRow)),
    first_row_max_ms: round(Math.max(...firstRow)),
    search_ms: round(median(search)),
    clear_ms: round(median(clear)),
    scroll_ms: round(median(scroll)),
    rows_in_dom: rowsInDom,
    dom_nodes: domNodes,
    js_heap_mib: round(heap / 1024 / 1024),
  }));
});
