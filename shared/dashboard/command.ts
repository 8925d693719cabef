// `offvia dashboard`: serves the live dashboard page until Ctrl-C (SIGINT) or SIGTERM.
import { createServer } from 'node:net';
import { Option, type Command } from 'commander';
import type { CliDeps } from '../ops/cli';
import type { OpsContext } from '../ops/context';
import { EXIT, OpsError } from '../ops/errors';
import { parseDuration, parsePositiveInt } from '../ops/selection';
import { startDashboard } from './server';

/** The port `offvia dashboard` binds when `--port` is absent (clear of the local stack's ports). */
const DEFAULT_DASHBOARD_PORT = 8090;

/** Page refresh, seconds: against a project each runs about twenty queries billed at least 10 MB each. */
const LOCAL_REFRESH_S = 5;
const CLOUD_REFRESH_S = 60;

/** The CLI's wrapper that parses the global flags, opens the context on demand and closes it after the body. */
export type CliAction = <A extends unknown[]>(
  body: (
    open: () => OpsContext,
    flags: { json?: boolean; pipeline?: string },
    ...args: A
  ) => Promise<number | void>,
) => (...args: A) => Promise<void>;

/** Flags of `offvia dashboard`; hidden `check`: check the flags and the port, then exit (deploy/local/dashboard.sh). */
interface DashboardFlags {
  port: string;
  host: string;
  since: string;
  refresh?: string;
  check?: boolean;
}

/** Binds `host:port` and lets it go again: the error `listen` would give (EADDRINUSE, ENOTFOUND), if any. */
function probePort(port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, host, () => server.close(() => resolve()));
  });
}

/** `binding`, its failure as one line when the port is in use (naming the flag to change). */
function bound<T>(binding: Promise<T>, port: number, host: string): Promise<T> {
  return binding.catch((err: unknown) => {
    if ((err as { code?: unknown }).code === 'EADDRINUSE') {
      throw new OpsError(`port ${port} on ${host} is in use: pick another with --port`);
    }
    throw err;
  });
}

/** Resolves on the first SIGINT or SIGTERM (the listeners are removed then). */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/** Registers `offvia dashboard` on the program (called from shared/ops/cli.ts). */
export function addDashboardCommand(program: Command, action: CliAction, deps: CliDeps): void {
  program
    .command('dashboard')
    .description(
      'serve a live dashboard page (the numbers of `offvia status` as charts, refreshed every few seconds)',
    )
    .option('--port <n>', 'TCP port', String(DEFAULT_DASHBOARD_PORT))
    .option(
      '--host <address>',
      'interface to bind (0.0.0.0 to share it on the network)',
      '127.0.0.1',
    )
    .option('--since <duration>', 'look-back window of every number: 30m, 1h, 7d', '1h')
    .option(
      '--refresh <seconds>',
      `how often the page refreshes itself (default: ${LOCAL_REFRESH_S} locally, ${CLOUD_REFRESH_S} with --project)`,
    )
    .addOption(new Option('--check').hideHelp())
    .addHelpText(
      'after',
      '\nStops with Ctrl-C.\nExamples:\n  npm run dashboard\n  offvia dashboard --port 9000 --since 6h\n  offvia --project my-project dashboard',
    )
    .action(
      action(async (open, _flags, opts: DashboardFlags) => {
        const port = parsePositiveInt(opts.port, '--port', 65_535);
        const lookBackMs = parseDuration(opts.since, '--since');
        const refreshS =
          opts.refresh === undefined
            ? undefined
            : parsePositiveInt(opts.refresh, '--refresh', 3600);
        if (opts.check) {
          await bound(probePort(port, opts.host), port, opts.host);
          return EXIT.ok;
        }
        const ctx = open();
        const refreshMs =
          (refreshS ?? (ctx.mode === 'cloud' ? CLOUD_REFRESH_S : LOCAL_REFRESH_S)) * 1000;
        const starting = startDashboard(ctx, {
          port,
          host: opts.host,
          lookBackMs,
          refreshMs,
          now: deps.now,
          onError: (err) =>
            deps.io.err(
              `offvia dashboard: collecting the numbers failed: ${err instanceof Error ? err.message : String(err)}`,
            ),
        });
        const running = await bound(starting, port, opts.host);
        deps.io.out(
          `offvia dashboard: ${running.url} (${ctx.mode} project ${ctx.projectId}); Ctrl-C to stop`,
        );
        const signal = await untilSignal();
        deps.io.err(`offvia dashboard: ${signal}, stopping`);
        await running.close();
        return EXIT.ok;
      }),
    );
}
