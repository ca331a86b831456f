// The demo as a newcomer meets it: Tower on a fresh sandbox at real clock speed 1, so what these tests see is
// what `cargo xtask run` shows. Kept apart from the main config (which runs the sandbox ten times faster) and
// short: each test waits at most half a minute for the world to move.
import { defineConfig } from '@playwright/test';
import base from './playwright.config';

const towerPort = Number(process.env.TOWER_E2E_PORT ?? 18080);
const server = Array.isArray(base.webServer) ? base.webServer[0] : base.webServer;

export default defineConfig({
  ...base,
  testDir: './demo',
  webServer: server && {
    ...server,
    command: server.command.replace('--speed 10', '--speed 1'),
    url: `http://127.0.0.1:${towerPort}/healthz`,
  },
});
