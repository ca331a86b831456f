// The fixture fleet read from real API servers (`cargo xtask kube up`, then `tower serve --config
// target/kube/tower.yaml`): etcd and a kube-apiserver per cluster built from their Go modules, holding the
// sandbox's objects, read with Tower's generated roles. Argo CD's API and the forge stay the sandbox's.
//
// Needs target/kube/bin (`cargo xtask kube build`, which the test command runs first); skipped without it
// except on CI, where that is a failure.
import { test, expect } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { assets, towerBin, towerPort } from '../playwright.config';
import { expectAccessible } from './axe';
import { asGuestOn, stop, untilReady } from './own-tower';

const repo = path.resolve(__dirname, '../..');
const binaries = path.join(repo, 'target/kube/bin/kube-apiserver');
const kubeUp = path.join(path.dirname(towerBin), 'kube-up');
const port = towerPort + 8;
const base = `http://127.0.0.1:${port}`;
let platform: ChildProcess | undefined;
let tower: ChildProcess | undefined;
let out: string | undefined;

const missing = !fs.existsSync(binaries);
if (missing && process.env.CI) {
  throw new Error(`${binaries} is missing on CI: \`cargo xtask kube build\` must have built it`);
}
test.skip(missing, 'needs `cargo xtask kube build`');

test.beforeAll(async () => {
  test.setTimeout(180_000);
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'tower-kube-'));
  platform = spawn(kubeUp, [`127.0.0.1:${port}`], {
    env: { ...process.env, TOWER_KUBE_OUT: out },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // kube-up prints its closing line once every cluster is loaded and the configuration written.
  await new Promise<void>((resolve, reject) => {
    let printed = '';
    platform?.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
      if (printed.includes('Ctrl-C stops them.')) resolve();
    });
    platform?.once('exit', (code) => reject(new Error(`kube-up exited (${code}):\n${printed}`)));
  });
  tower = spawn(towerBin, ['serve', '--config', path.join(out, 'tower.yaml'), '--assets', assets], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await untilReady(base, 60_000);
});

test.afterAll(async () => {
  // SIGTERM and SIGINT (kube-up's Ctrl-C), so both remove their temporary folders, which the test command checks.
  await stop(tower, 'SIGTERM');
  await stop(platform, 'SIGINT');
  if (out) fs.rmSync(out, { recursive: true, force: true });
});

test('the Overview shows the fixture fleet read from real API servers', async ({ page }) => {
  test.setTimeout(90_000);
  await page.setViewportSize({ width: 1280, height: 720 });
  await asGuestOn(page, base, '/');
  for (const service of ['cart', 'catalog', 'checkout', 'ledger', 'payments', 'recommendations', 'refunds', 'search']) {
    await expect(page.locator(`[data-testid="matrix-cell"][data-service="${service}"][data-env="prod"]`)).toBeVisible();
  }
  // What the fixtures set up shows as it does on the sandbox: catalog's prod Application out of sync.
  await expect(page.locator('[data-testid="matrix-cell"][data-service="catalog"][data-env="prod"]')
    .getByTestId('chip-sync')).toHaveText(/OutOfSync/);
  // No cluster is lost, and nothing is forbidden to Tower's generated roles.
  await expect(page.getByTestId('unreachable')).toHaveCount(0);
  if (process.env.TOWER_SCREENSHOTS) {
    await page.screenshot({ path: path.join(repo, 'docs/kube.png') });
  }

  await page.goto(`${base}/services/payments`);
  const prod = page.locator('[data-testid="deployment-card"][data-env="prod"]');
  await expect(prod.getByTestId('card-version')).toHaveText(/[0-9a-f]{7}/);
  await expect(prod.getByTestId('forbidden')).toHaveCount(0);
  await expect(prod.getByTestId('unreachable')).toHaveCount(0);
  await expectAccessible(page, 'a service page read from real API servers');
});
