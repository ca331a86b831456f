// A Tower of a spec's own, for fleets the suite's Tower does not run (two prod clusters, a cluster brought up
// from nothing, two thousand services, real API servers): started beside it, on ports offset from its own, and
// stopped with SIGTERM so it removes its temporary folders, which `cargo xtask test` checks. Not a spec.
import { test, expect, type Page } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { assets, sandboxPort, secretsDir, towerBin, towerPort } from '../playwright.config';

/** Where a spec's own Tower and its sandbox answer. */
export interface OwnTower {
  base: string;
  sandboxAt: string;
}

/** Starts `tower serve --sandbox` with `world`'s arguments before the spec's (or describe block's) tests and
 * stops it after them; it counts as started once `/readyz` answers 200, within `startWithin` ms. */
export function ownTower(offset: number, world: string[], startWithin = 90_000): OwnTower {
  const port = towerPort + offset;
  const own = { base: `http://127.0.0.1:${port}`, sandboxAt: `http://127.0.0.1:${sandboxPort + offset}` };
  let tower: ChildProcess | undefined;
  test.beforeAll(async () => {
    test.setTimeout(startWithin + 10_000);
    // Checked by the secrets check like the suite's own Tower: its secrets and issued tokens, its log, the
    // suite's session key.
    fs.mkdirSync(secretsDir, { recursive: true });
    const log = fs.openSync(path.join(secretsDir, `tower-${port}.log`), 'a');
    tower = spawn(
      towerBin,
      ['serve', '--sandbox', '--listen', `127.0.0.1:${port}`, '--sandbox-listen', `127.0.0.1:${sandboxPort + offset}`,
        '--assets', assets, '--sandbox-no-metrics',
        '--sandbox-secrets-file', path.join(secretsDir, `secrets-${port}.jsonl`), ...world],
      {
        stdio: ['ignore', log, log],
        env: { ...process.env, TOWER_SESSION_SECRET: process.env.TOWER_E2E_SESSION_SECRET },
      },
    );
    fs.closeSync(log);
    await untilReady(own.base, startWithin);
  });
  test.afterAll(async () => {
    await stop(tower, 'SIGTERM');
  });
  return own;
}

/** Waits until the Tower at `base` has its first picture (`/readyz` 200). */
export async function untilReady(base: string, within: number) {
  await expect
    .poll(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status, { timeout: within, intervals: [500, 1_000] })
    .toBe(200);
}

/** Stops `child` with `signal` and waits for it to exit (nothing when it has already). */
export async function stop(child: ChildProcess | undefined, signal: NodeJS.Signals) {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}

/** Opens `path` on the Tower at `base` as its own guest: the suite's saved cookies belong to the other Tower. */
export async function asGuestOn(page: Page, base: string, path: string) {
  await page.context().clearCookies();
  await page.goto(`${base}${path}`);
  await page.getByTestId('continue-as-guest').click();
  await expect(page.getByTestId('user-name')).toHaveText('Guest');
}
