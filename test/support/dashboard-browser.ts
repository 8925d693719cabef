// The dashboard in a real browser for the end-to-end tests: the dashboard server over the local stack, opened in
// headless Chromium (Debian's package, driven by playwright-core) once its first status is on the page; then closed.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startDashboard, type RunningDashboard } from '../../shared/dashboard/server';
import { connect, type OpsContext } from '../../shared/ops/context';

/** Debian's Chromium (apt-get install chromium; deploy/local/install.sh installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/** The page's refresh interval, ms; its look-back is an hour (everything the stack's tests published). */
export const REFRESH_MS = 1000;

/** A running dashboard and the browser page showing it. */
export interface DashboardInBrowser {
  readonly ctx: OpsContext;
  readonly dashboard: RunningDashboard;
  readonly browser: BrowserContext;
  readonly userDataDir: string;
  readonly page: Page;
}

/**
 * Skips the calling suite when Chromium is missing; under CI (CI=true) a missing browser is a failure instead.
 * @throws Error naming the missing executable when CI=true
 */
export function requireChromium(suite: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CI === 'true') {
    throw new Error(`${CHROMIUM} is missing (apt-get install chromium; deploy/local/install.sh)`);
  }
  console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
  suite.skip();
}

/**
 * Starts the dashboard (port from the kernel, `REFRESH_MS`, an hour's look-back) over the stack's environment, opens it in
 * a fresh headless Chromium profile 1280 px wide and `height` px high, and waits (up to 60 s) for its first status.
 * Page errors are printed. @throws what the dashboard, the browser or the wait throws
 */
export async function openDashboard(height: number): Promise<DashboardInBrowser> {
  const ctx = connect({});
  const dashboard = await startDashboard(ctx, {
    port: 0,
    host: '127.0.0.1',
    lookBackMs: 3_600_000,
    refreshMs: REFRESH_MS,
    onError: (err) => console.error('dashboard: collecting failed:', err),
  });
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'offvia-chromium-'));
  let browser: BrowserContext | undefined;
  try {
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      viewport: { width: 1280, height },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const page = await browser.newPage();
    page.on('pageerror', (err) => console.error('page error:', err.message));
    await page.goto(dashboard.url);
    await page.waitForSelector('body[data-status-now]', { timeout: 60_000 });
    return { ctx, dashboard, browser, userDataDir, page };
  } catch (err) {
    await closeAll(browser, userDataDir, dashboard, ctx);
    throw err;
  }
}

async function closeAll(
  browser: BrowserContext | undefined,
  userDataDir: string,
  dashboard: RunningDashboard,
  ctx: OpsContext,
): Promise<void> {
  await browser?.close();
  rmSync(userDataDir, { recursive: true, force: true });
  await dashboard.close();
  await ctx.close();
}

/** Closes the browser, removes its profile, stops the dashboard and closes its clients; `undefined`: nothing. */
export async function closeDashboard(opened: DashboardInBrowser | undefined): Promise<void> {
  if (opened !== undefined)
    await closeAll(opened.browser, opened.userDataDir, opened.dashboard, opened.ctx);
}
