// The browser half of `cargo xtask bench pipelines` (run with playwright.bench.config.ts, against a sandbox in
// `--scale` mode): the DAG layout of the 300-task monorepo run as the wasm build measures it, and the
// 100,000-line build log of payments' newest seeded build (open to first lines painted, search for the term
// that only line 90,000 carries, memory, scrolling). Every number is printed as one JSON line:
// `{"bench":"pipelines","what":…,"unit":…,…}`.
import { test, expect, type Page } from '@playwright/test';
import { signInAs } from '../tests/session';

/** Scale mode's 300-task run (sandbox `fixtures::tekton::monorepo::RUN`). */
const MONOREPO_RUN = '/pipelines/tekton-ci/svc-0001-monorepo-build-1';
/** The service and the commit message of the build whose `build-image`/`build` step logs 100,000 lines. */
const LONG_LOG_SERVICE = 'payments';
const LONG_LOG_MESSAGE = 'Tidy error messages';
/** The line (1-based) that alone carries the term searched for. */
const MARK_LINE = 90_000;
const LAYOUT_SAMPLES = 7;
const SEARCH_SAMPLES = 7;

/** Signs in as the owner once Tower answers, and waits until its pipeline caches are filled: in scale mode that
 * takes a while after start (until then the run routes answer 503). */
async function ready(page: Page) {
  await expect.poll(async () => (await page.request.get('/api/v1/session', { timeout: 10_000 }).catch(() => null))?.ok() ?? false,
    { timeout: 300_000, intervals: [2_000] }).toBe(true);
  await signInAs(page, 'ada', '/');
  await expect.poll(async () => (await page.request.get('/api/v1/pipelines', { timeout: 30_000 }).catch(() => null))?.status() ?? 0,
    { timeout: 300_000, intervals: [2_000] }).toBe(200);
}

function report(what: string, unit: string, values: number[], extra: Record<string, unknown> = {}) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  const round = (v: number) => Math.round(v * 100) / 100;
  console.log(JSON.stringify({
    bench: 'pipelines', what, unit, samples: values.length,
    p50: round(at(0.5)), p99: round(at(0.99)), max: round(sorted[sorted.length - 1]), first: round(values[0]), ...extra,
  }));
}

test('the DAG of a 300-task run is laid out in the browser', async ({ page }) => {
  await ready(page);
  const samples: number[] = [];
  let nodes = 0;
  for (let i = 0; i < LAYOUT_SAMPLES; i += 1) {
    await page.goto(MONOREPO_RUN);
    const dag = page.getByTestId('dag');
    await expect(dag).toHaveAttribute('data-layout-ms', /\d/, { timeout: 60_000 });
    samples.push(Number(await dag.getAttribute('data-layout-ms')));
    nodes = await page.locator('[data-testid^="dag-node-"]').count();
  }
  expect(nodes).toBe(300);
  report('dag_layout_300_tasks_wasm', 'ms', samples, { nodes, target_ms: 150 });
});

/** The run page's path of the long log's run. */
async function longLogRun(page: Page): Promise<string> {
  const answer = await (await page.request.get(`/api/v1/services/${LONG_LOG_SERVICE}/pipelines?revision=main`)).json();
  const run = answer.runs.find((r: any) => r.message === LONG_LOG_MESSAGE);
  expect(run, `a ${LONG_LOG_SERVICE} build of "${LONG_LOG_MESSAGE}"`).toBeTruthy();
  return `/pipelines/${run.namespace}/${run.name}`;
}

/** Installs the page-side stopwatch: the click on the step, and the first log line painted after it. */
async function watchFirstPaint(page: Page) {
  await page.evaluate(() => {
    const bench: any = ((window as any).__bench = {});
    document.addEventListener('click', (event) => {
      if ((event.target as Element).closest('[data-testid="step-build"]')) bench.clicked = performance.now();
    }, true);
    const observer = new MutationObserver(() => {
      if (bench.painted || !document.querySelector('[data-testid="log-line"]')) return;
      observer.disconnect();
      // The frame that draws it, then the task after that frame: the lines are on screen.
      requestAnimationFrame(() => setTimeout(() => { bench.painted = performance.now(); }, 0));
    });
    observer.observe(document.body, { childList: true, subtree: true });
  });
}

/** Types `term` into the console's search as one input event and times it until the count reads "1 of 1"
 * and the current match is in view. */
async function timedSearch(page: Page, term: string): Promise<{ ms: number; line: string | null }> {
  return page.evaluate(async (term) => {
    const input = document.querySelector('[data-testid="log-search"]') as HTMLInputElement;
    const viewport = document.querySelector('[data-testid="log-viewport"]') as HTMLElement;
    const inView = (el: Element) => {
      const box = el.getBoundingClientRect();
      const frame = viewport.getBoundingClientRect();
      return box.top >= frame.top && box.bottom <= frame.bottom;
    };
    const start = performance.now();
    input.value = term;
    input.dispatchEvent(new Event('input', { bubbles: true }));
    return new Promise((resolve) => {
      const check = () => {
        const count = document.querySelector('[data-testid="log-match-count"]')?.textContent ?? '';
        const mark = document.querySelector('.log-console mark.current');
        if (count.startsWith('1 of') && mark && inView(mark)) {
          resolve({ ms: performance.now() - start, line: mark.closest('[data-testid="log-line"]')?.getAttribute('data-line') ?? null });
        } else {
          requestAnimationFrame(check);
        }
      };
      check();
    });
  }, term);
}

/** Clears the search and goes back to the top of the log. */
async function resetSearch(page: Page) {
  await page.evaluate(async () => {
    const input = document.querySelector('[data-testid="log-search"]') as HTMLInputElement;
    input.value = '';
    input.dispatchEvent(new Event('input', { bubbles: true }));
    const viewport = document.querySelector('[data-testid="log-viewport"]') as HTMLElement;
    viewport.scrollTop = 0;
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  });
}

test('a 100,000-line log opens, searches, scrolls and fits in memory', async ({ page }) => {
  await ready(page);
  const run = await longLogRun(page);
  const download = `/api/v1/services/${LONG_LOG_SERVICE}${run}/tasks/build-image/steps/build/log.txt`;
  const raw = await (await page.request.get(download)).text();
  const lines = raw.split('\n');
  const term = lines[MARK_LINE - 1]?.match(/sha256:[0-9a-f]{64}/)?.[0];
  expect(term, `line ${MARK_LINE} of the long log carries a digest`).toBeTruthy();

  // Open to first lines painted, from the click on the step (the console's code is fetched on the way).
  await page.goto(`${run}?task=build-image`);
  await expect(page.getByTestId('step-build')).toBeVisible({ timeout: 30_000 });
  await watchFirstPaint(page);
  await page.getByTestId('step-build').click();
  await expect.poll(() => page.evaluate(() => (window as any).__bench.painted ?? null), { timeout: 30_000 }).not.toBeNull();
  const open = await page.evaluate(() => (window as any).__bench.painted - (window as any).__bench.clicked);
  const status = page.getByTestId('log-status');
  await expect(status).toHaveText(/End of log · 100000 lines/, { timeout: 120_000 });
  const whole = await page.evaluate(() => performance.now() - (window as any).__bench.clicked);
  report('log_open_to_first_lines_painted', 'ms', [open], { target_ms: 1000 });
  report('log_open_to_all_100000_lines', 'ms', [whole]);

  // Search the whole buffer for the term of line 90,000.
  const searches: number[] = [];
  for (let i = 0; i < SEARCH_SAMPLES; i += 1) {
    await resetSearch(page);
    const { ms, line } = await timedSearch(page, term!);
    expect(line).toBe(String(MARK_LINE));
    searches.push(ms);
  }
  report('log_search_term_on_line_90000', 'ms', searches, { target_ms: 200 });

  // Scrolling: a frame per step through the whole log; how long frames took.
  const frames: number[] = await page.evaluate(async () => {
    const viewport = document.querySelector('[data-testid="log-viewport"]') as HTMLElement;
    const times: number[] = [];
    let last = performance.now();
    const steps = 240;
    for (let i = 1; i <= steps; i += 1) {
      viewport.scrollTop = (viewport.scrollHeight * i) / steps;
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const now = performance.now();
      times.push(now - last);
      last = now;
    }
    return times;
  });
  report('log_scroll_frame', 'ms', frames, { target_ms: 16.7 });

  // Memory, after a collection when the flag allows one.
  const memory = await page.evaluate(() => {
    (window as any).gc?.();
    const heap = (performance as any).memory?.usedJSHeapSize ?? null;
    const wasm = (window as any).__towerWasmMemoryBytes?.() ?? null;
    return { heap, wasm };
  });
  const mb = (bytes: number | null) => (bytes === null ? null : Math.round((bytes / 1_048_576) * 10) / 10);
  console.log(JSON.stringify({
    bench: 'pipelines', what: 'log_memory_100000_lines', unit: 'MB',
    js_heap: mb(memory.heap), wasm: mb(memory.wasm),
    total: memory.heap !== null && memory.wasm !== null ? mb(memory.heap + memory.wasm) : null, target_mb: 150,
  }));
  expect(memory.wasm).not.toBeNull();
});
