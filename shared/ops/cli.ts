// The `offvia` command line: commands, flags, help and exit codes (commander); each command's work is in its module.
import type { PubSub } from '@google-cloud/pubsub';
import { Command, CommanderError } from 'commander';
import { connect, query, type ConnectOptions, type OpsContext } from './context';
import { EXIT, OpsError, UsageError } from './errors';
import { plainRow, printReport, processIo, rowsTable, toJson, type Io } from './output';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { loadFix, type FixFlags } from './fix';
import { formatReprocess, reprocess } from './reprocess';
import { redrive } from './redrive';
import { operatorName } from './run';
import {
  collect,
  parseDuration,
  parseIdList,
  parsePattern,
  parsePositiveInt,
  parseTimeFlag,
  type RowSelection,
} from './selection';
import { collectStatus, formatStatus } from './status';
import { formatTrace, trace } from './trace';
import { addDashboardCommand, type CliAction } from '../dashboard/command';
import { addReplayCommand } from './replay-command';
import { addGoldCommand } from './restate';
import { addSnapshotCommands } from './snapshot';
import { PIPELINES } from '../pipelines';
import {
  assertCommandAvailable,
  choosePipeline,
  DEFAULT_PIPELINE,
  pipelineStages,
} from './pipeline-choice';
import { listQuarantine, printQuarantineList } from './quarantine-list';

/** Global flags, valid before or after the command; `pipeline` defaults to booking. */
interface GlobalFlags {
  project?: string;
  stackDir?: string;
  json?: boolean;
  pipeline?: string;
}

/** A command's full name below the program, e.g. `gold restate`: what `unavailableReason` is asked about. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Flags of the selection and the fix, shared by `quarantine reprocess` and `bad-data redrive`. */
interface RedriveFlags extends FixFlags {
  stage?: string[];
  reason?: string;
  error?: string;
  target?: string[];
  since?: string;
  until?: string;
  ids?: string[];
  all?: boolean;
  limit: string;
  dryRun?: boolean;
  concurrency: string;
  sample: string;
  by?: string;
}

/** Adds the fix flags and the run flags to a re-drive command. */
function redriveOptions(command: Command): Command {
  return command
    .option('--since <time>', 'rows received at or after: a duration (2h) or an RFC 3339 time')
    .option('--until <time>', 'rows received before: a duration (10m) or an RFC 3339 time')
    .option('--ids <ids>', 'comma-separated ids (repeatable)', collect)
    .option('--all', 'select every open row (required when no other selector is given)')
    .option('--limit <n>', 'most rows, oldest first', '100000')
    .option(
      '--set <field=value>',
      'set a top-level field (value parsed as JSON, else text; repeatable)',
      collect,
    )
    .option('--upper <field>', 'upper-case a string field (repeatable)', collect)
    .option('--rename <old=new>', 'rename a top-level field (repeatable)', collect)
    .option('--drop <field>', 'remove a top-level field (repeatable)', collect)
    .option(
      '--fix-module <path>',
      'a JS/TS module exporting fix(payload, row) => fixed payload, or null to leave the row open',
    )
    .option(
      '--dry-run',
      'show how many rows and a before/after sample with where each would go; write nothing',
    )
    .option('--concurrency <n>', 'rows in flight', '8')
    .option('--sample <n>', 'rows shown before/after in a dry run', '5')
    .option('--by <name>', 'operator recorded in the resolution rows (default: OS user)');
}

/**
 * The selection from the flags.
 * @throws UsageError for a bad value, or when nothing selects and --all is absent.
 */
function selectionOf(
  flags: RedriveFlags,
  nowMs: number,
  kind: 'quarantine' | 'bad-data',
  pipeline: AnyPipelineDefinition,
): RowSelection {
  // `--ids ""` (an empty shell variable) or `--stage ,` names nothing: it must not fall through to "every row".
  const lists = { '--ids': flags.ids, '--stage': flags.stage, '--target': flags.target };
  for (const [flag, values] of Object.entries(lists)) {
    if (values !== undefined && parseIdList(values).length === 0) {
      throw new UsageError(`${flag}: no value given (to select every open row, pass --all)`);
    }
  }
  const selection: RowSelection = {
    limit: parsePositiveInt(flags.limit, '--limit', 10_000_000),
    ...(flags.stage ? { stages: pipelineStages(pipeline, flags.stage) } : {}),
    ...(flags.reason !== undefined ? { pattern: parsePattern(flags.reason, '--reason') } : {}),
    ...(flags.error !== undefined ? { pattern: parsePattern(flags.error, '--error') } : {}),
    ...(flags.target ? { targets: parseIdList(flags.target) } : {}),
    ...(flags.since !== undefined ? { sinceMs: parseTimeFlag(flags.since, '--since', nowMs) } : {}),
    ...(flags.until !== undefined ? { untilMs: parseTimeFlag(flags.until, '--until', nowMs) } : {}),
    ...(flags.ids ? { ids: parseIdList(flags.ids) } : {}),
  };
  // An empty or inverted time range selects nothing; say so rather than report zero rows as if none matched.
  if (
    selection.sinceMs !== undefined &&
    selection.untilMs !== undefined &&
    selection.untilMs <= selection.sinceMs
  ) {
    throw new UsageError(
      `--until (${new Date(selection.untilMs).toISOString()}) must be after --since (${new Date(selection.sinceMs).toISOString()})`,
    );
  }
  // `limit` aside, any key of the selection filters.
  if (Object.keys(selection).length === 1 && flags.all !== true) {
    const by = kind === 'quarantine' ? '--stage, --reason' : '--target, --error';
    throw new UsageError(`select rows with ${by}, --since, --until or --ids, or pass --all`);
  }
  return selection;
}

/**
 * What the commands share (tests inject them): the output, the clock (epoch ms), the connection, the directory a fix
 * module's path is resolved against, and the Pub/Sub client of `snapshot` and `seek`.
 */
export interface CliDeps {
  readonly io: Io;
  readonly now: () => number;
  readonly connect: (flags: ConnectOptions) => OpsContext;
  readonly cwd: string;
  readonly pubsub?: ((ctx: OpsContext) => PubSub) | undefined;
}

/** Builds the program; `run` is called with the connected context and the command's own flags. */
export function buildProgram(deps: CliDeps, onExit: (code: number) => void): Command {
  // Every --pipeline given: two different ones are refused (taking the last would silently ignore the other).
  const pipelinesGiven: string[] = [];
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
    .option(
      '--pipeline <name>',
      `the registered pipeline to work on (${PIPELINES.map((p) => p.name).join(', ')})`,
      (value: string): string => {
        pipelinesGiven.push(value);
        return value;
      },
      DEFAULT_PIPELINE,
    )
    .hook('preAction', () => {
      const other = pipelinesGiven.find((name) => name !== pipelinesGiven[0]);
      if (other !== undefined) {
        throw new UsageError(
          `--pipeline given twice (${JSON.stringify(pipelinesGiven[0])} and ${JSON.stringify(other)}): give one`,
        );
      }
    })
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .configureOutput({
      writeOut: (s) => deps.io.out(s),
      writeErr: (s) => deps.io.err(s),
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
  const action: CliAction =
    (body) =>
    async (...args): Promise<void> => {
      const command = args[args.length - 1] as Command;
      const flags = command.optsWithGlobals<GlobalFlags>();
      let ctx: OpsContext | undefined;
      const open = (): OpsContext =>
        (ctx ??= deps.connect({
          project: flags.project,
          stackDir: flags.stackDir,
          pipeline: choosePipeline(flags.pipeline),
        }));
      try {
        assertCommandAvailable(choosePipeline(flags.pipeline), commandPath(command));
        onExit((await body(open, flags, ...args)) ?? EXIT.ok);
      } finally {
        await ctx?.close();
      }
    };

  /** The action of a re-drive command: its options from the flags, the run, its report; exit 1 when a row failed. */
  const redriveAction = (kind: 'quarantine' | 'bad-data', run: typeof reprocess, what: string) =>
    action(async (open, flags, opts: RedriveFlags) => {
      const options = {
        selection: selectionOf(opts, deps.now(), kind, choosePipeline(flags.pipeline)),
        fix: await loadFix(opts, deps.cwd),
        dryRun: opts.dryRun === true,
        concurrency: parsePositiveInt(opts.concurrency, '--concurrency', 256),
        operator: operatorName(opts.by),
        sampleSize: parsePositiveInt(opts.sample, '--sample', 1000),
      };
      const io = flags.json ? { ...deps.io, progressStream: undefined } : deps.io;
      const report = await run(open(), options, io, deps.now);
      deps.io.out(flags.json ? toJson(report) : formatReprocess(report, what));
      return report.failed.length > 0 ? EXIT.failure : EXIT.ok;
    });

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
        const ctx = open();
        const report = await collectStatus(ctx, ctx.pipeline, sinceMs, deps.now());
        printReport(deps.io, report, flags.json === true, formatStatus);
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
        const ctx = open();
        const report = await trace(ctx, ctx.pipeline, id.trim());
        printReport(deps.io, report, flags.json === true, formatTrace);
      }),
    );

  const quarantine = program
    .command('quarantine')
    .description(
      "work on the quarantine table (offvia_quarantine.poisoned_events; with --pipeline, that pipeline's dead-letter table)",
    );
  quarantine
    .command('list')
    .description('the newest rows of the quarantine or dead-letter table: stage, reason, payload')
    .option(
      '--stage <stage>',
      'error stage (repeatable): PARSE_JSON, SCHEMA_VALIDATION, ...',
      collect,
    )
    .option('--since <time>', 'rejected at or after: a duration (2h) or an RFC 3339 time')
    .option('--limit <n>', 'most rows, newest first', '20')
    .addHelpText(
      'after',
      '\nExamples:\n  offvia quarantine list --since 1h\n  offvia --pipeline telemetry quarantine list --stage RANGE_VALIDATION --json',
    )
    .action(
      action(async (open, flags, opts: { stage?: string[]; since?: string; limit: string }) => {
        const pipeline = choosePipeline(flags.pipeline);
        const options = {
          limit: parsePositiveInt(opts.limit, '--limit', 10_000),
          stages: opts.stage === undefined ? undefined : pipelineStages(pipeline, opts.stage),
          sinceMs:
            opts.since === undefined ? undefined : parseTimeFlag(opts.since, '--since', deps.now()),
        };
        const ctx = open();
        const report = await listQuarantine(ctx, ctx.pipeline, options);
        printQuarantineList(deps.io, report, flags.json === true);
      }),
    );
  redriveOptions(
    quarantine
      .command('reprocess')
      .description(
        'fix open quarantine rows and send them through the ingest path (validation, Silver, windows) with lineage',
      )
      .option(
        '--stage <stage>',
        'error_stage (repeatable): PARSE_JSON, SCHEMA_VALIDATION, ...',
        collect,
      )
      .option('--reason <regex>', 'error_reason matches (RE2)'),
  )
    .addHelpText(
      'after',
      '\nFixes apply in the order --rename, --set, --upper, --drop, --fix-module.\nExamples:\n' +
        '  offvia quarantine reprocess --reason "origin" --upper origin --upper destination --dry-run\n' +
        '  offvia quarantine reprocess --ids 17,18 --set currency=EUR\n' +
        '  offvia quarantine reprocess --stage PARSE_JSON --fix-module ./fixes/close-brace.ts',
    )
    .action(redriveAction('quarantine', reprocess, 'quarantine reprocess'));

  const badData = program
    .command('bad-data')
    .description('work on the bad-data table (offvia_quarantine.bad_data)');
  redriveOptions(
    badData
      .command('redrive')
      .description(
        're-drive open bad-data rows to their target table with their original insertId (once the cause is fixed, or with a fix)',
      )
      .option('--target <table>', 'target_dest, project.dataset.table (repeatable)', collect)
      .option('--error <regex>', 'error matches (RE2)'),
  )
    .addHelpText(
      'after',
      '\nFixes apply to the row (Silver columns plus the extra fields) in the order --rename, --set, --upper, --drop,\n' +
        '--fix-module. Rows the retry-age guard parked (target_dest is a step, not a table) go through the ingest path.\n' +
        'Examples:\n' +
        '  offvia bad-data redrive --error "no such field" --dry-run\n' +
        '  offvia bad-data redrive --error INCOMPATIBLE_WITH_COLUMN --drop loyalty_points',
    )
    .action(redriveAction('bad-data', redrive, 'bad-data redrive'));

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
        printReport(
          deps.io,
          rows,
          flags.json === true,
          (r) => `${rowsTable(r, 80)}\n${r.length} row(s)`,
        );
      }),
    );

  addDashboardCommand(program, action, deps);
  addReplayCommand(program, action, deps);
  addGoldCommand(program, action, deps);
  addSnapshotCommands(program, action, deps, deps.pubsub);

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
    pubsub: deps.pubsub,
  };
  let code: number = EXIT.ok;
  const program = buildProgram(full, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (err) {
    // --help and --version end here too, with exit code 0.
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (process.env.OFFVIA_DEBUG && err instanceof Error) full.io.err(err.stack ?? err.message);
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    full.io.err(`offvia: ${message}`);
    return err instanceof OpsError ? err.exitCode : EXIT.failure;
  }
}
