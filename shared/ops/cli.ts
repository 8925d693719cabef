// The `offvia` command line: commands, flags, help and exit codes (commander); each command's work is in its module.
import { Command, CommanderError } from 'commander';
import { connect, query, type OpsContext } from './context';
import { EXIT, OpsError, UsageError } from './errors';
import { plainRow, processIo, table, toJson, type Io } from './output';
import { parseDuration } from './selection';
import { collectStatus, printStatus } from './status';
import { printTrace, trace } from './trace';

/** Global flags, valid before or after the command. */
interface GlobalFlags {
  project?: string;
  stackDir?: string;
  json?: boolean;
}

/** What the commands share: the output, the clock and a way to connect (tests inject both). */
export interface CliDeps {
  readonly io: Io;
  /** Epoch ms. */
  readonly now: () => number;
  readonly connect: (flags: {
    project?: string | undefined;
    stackDir?: string | undefined;
  }) => OpsContext;
  /** Directory relative paths (a fix module) are resolved against. */
  readonly cwd: string;
}

/** Builds the program; `run` is called with the connected context and the command's own flags. */
export function buildProgram(deps: CliDeps, onExit: (code: number) => void): Command {
  const program = new Command('offvia')
    .description(
      'Operate the Offvia booking pipeline: trace a message, see the status of every layer, re-drive quarantine and bad data.\n' +
        'Targets the local stack (.local/stack/env) by default, or a Google Cloud project with --project (Application Default Credentials).',
    )
    .option('--project <id>', 'Google Cloud project (ADC); without it, the local stack')
    .option(
      '--stack-dir <dir>',
      'local stack state directory (default .local/stack or OFFVIA_STACK_DIR)',
    )
    .option('--json', 'machine-readable output (one JSON document on stdout)')
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .configureOutput({
      writeOut: (s) => deps.io.out(s),
      writeErr: (s) => deps.io.err(s),
      // One line: `offvia: <commander's message> (offvia --help)`, the same prefix as every other error.
      outputError: (s, write) =>
        write(
          `offvia: ${s
            .trim()
            .replace(/^error: /, '')
            .replace(/\s*\n\s*/g, ' ')} (see offvia --help)\n`,
        ),
    });

  /**
   * Runs a command body with the global flags and one-line errors. The body parses its own flags first and then
   * calls `open()` for the connection, so a bad flag is reported as such even when no stack is up.
   */
  const action =
    <A extends unknown[]>(
      body: (open: () => OpsContext, flags: GlobalFlags, ...args: A) => Promise<number | void>,
    ) =>
    async (...args: A): Promise<void> => {
      const command = args[args.length - 1] as Command;
      const flags = command.optsWithGlobals<GlobalFlags>();
      let ctx: OpsContext | undefined;
      const open = (): OpsContext =>
        (ctx ??= deps.connect({ project: flags.project, stackDir: flags.stackDir }));
      try {
        onExit((await body(open, flags, ...args)) ?? EXIT.ok);
      } finally {
        await ctx?.close();
      }
    };

  program
    .command('status')
    .description(
      'counts per layer, quarantine and bad data by cause, retry store, watermark, windows, last runs',
    )
    .option('--since <duration>', 'look-back window: 30m, 1h, 7d', '1h')
    .addHelpText('after', '\nExamples:\n  offvia status\n  offvia status --since 24h --json')
    .action(
      action(async (open, flags, opts: { since: string }) => {
        const sinceMs = deps.now() - parseDuration(opts.since, '--since');
        printStatus(deps.io, await collectStatus(open(), sinceMs, deps.now()), flags.json === true);
      }),
    );

  program
    .command('trace')
    .description(
      'every place a message or event is: Bronze, Silver and its dedup view, quarantine, bad data, resolutions, the schema-retry store, the dedup ledger, windows, gold panes, log lines',
    )
    .argument('<id>', 'a Pub/Sub message id, an event_id or a booking_id')
    .addHelpText(
      'after',
      '\nExit code 3 when no layer knows the id.\nExamples:\n  offvia trace BK-90210\n  offvia trace 17 --json',
    )
    .action(
      action(async (open, flags, id: string) => {
        if (id.trim() === '') throw new UsageError('trace: the id is empty');
        printTrace(deps.io, await trace(open(), id.trim()), flags.json === true);
      }),
    );

  program
    .command('query')
    .description(
      'run one SQL query (GoogleSQL) against the target; `bq` does not work against the local emulator',
    )
    .argument('<sql>', 'the query; `{{project}}` is replaced by the project id')
    .addHelpText(
      'after',
      '\nExample:\n  offvia query "SELECT error_stage, COUNT(*) n FROM `{{project}}.offvia_quarantine.poisoned_events_open` GROUP BY 1"',
    )
    .action(
      action(async (open, flags, sql: string) => {
        const ctx = open();
        const rows = (await query(ctx, sql.replace(/\{\{\s*project\s*\}\}/g, ctx.projectId))).map(
          plainRow,
        );
        if (flags.json) deps.io.out(toJson(rows));
        else {
          const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
          deps.io.out(
            table(
              columns,
              rows.map((r) => columns.map((c) => r[c])),
              80,
            ),
          );
          deps.io.out(`${rows.length} row(s)`);
        }
      }),
    );

  return program;
}

/**
 * Runs `offvia` with `argv` (without node and the script) and resolves with the exit code: 0 ok, 1 failure,
 * 2 usage error, 3 not found. Every error is printed as one line on stderr, never a stack trace (set
 * OFFVIA_DEBUG=1 for the stack).
 */
export async function main(argv: readonly string[], deps: Partial<CliDeps> = {}): Promise<number> {
  const full: CliDeps = {
    io: deps.io ?? processIo,
    now: deps.now ?? Date.now,
    connect: deps.connect ?? ((flags) => connect(flags)),
    cwd: deps.cwd ?? process.cwd(),
  };
  let code: number = EXIT.ok;
  const program = buildProgram(full, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      if (
        err.code === 'commander.helpDisplayed' ||
        err.code === 'commander.version' ||
        err.exitCode === 0
      ) {
        return EXIT.ok;
      }
      if (err.code === 'commander.help') return EXIT.ok;
      return EXIT.usage;
    }
    if (process.env.OFFVIA_DEBUG && err instanceof Error) full.io.err(err.stack ?? err.message);
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    full.io.err(`offvia: ${message}`);
    return err instanceof OpsError ? err.exitCode : EXIT.failure;
  }
}
