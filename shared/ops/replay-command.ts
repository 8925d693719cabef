// `offvia replay`: its flags, help and exit code; the work is in replay.ts.
import type { Command } from 'commander';
import type { CliAction } from '../dashboard/command';
import type { CliDeps } from './cli';
import { EXIT } from './errors';
import { toJson } from './output';
import { replay, replayDeps } from './replay';
import { formatReplay } from './replay-format';
import { DEFAULT_CHUNK_MINUTES, parseReplayFlags, type ReplayFlags } from './replay-plan';
import { operatorName } from './run';
import { collect } from './selection';

/** Registers `offvia replay` on the program (called from shared/ops/cli.ts). */
export function addReplayCommand(program: Command, action: CliAction, deps: CliDeps): void {
  program
    .command('replay')
    .description(
      'replay Bronze messages of a publish-time range through the ingest path (idempotent), in resumable chunks',
    )
    .option('--from <time>', 'publish time, inclusive: RFC 3339, e.g. 2026-12-01T10:00:00Z')
    .option('--to <time>', 'publish time, exclusive: RFC 3339, later than --from')
    .option(
      '--filter <attr.KEY=VALUE>',
      'only messages whose attribute KEY is VALUE (repeatable; all must hold)',
      collect,
    )
    .option(
      '--message-ids <ids>',
      'only these Pub/Sub message ids, separated by commas or blanks (repeatable)',
      collect,
    )
    .option(
      '--dry-run',
      'count the rows and the BigQuery bytes the range would scan; write nothing',
    )
    .option('--rate <n>', 'at most N messages per second (default: no limit)')
    .option(
      '--chunk-minutes <m>',
      `publish-time minutes per chunk (one checkpoint each; default: ${DEFAULT_CHUNK_MINUTES}; a resumed run keeps its own)`,
    )
    .option('--resume <run-id>', 'continue a run: redo its chunks that are not done')
    .option('--concurrency <n>', 'messages in flight', '8')
    .option('--by <name>', 'operator recorded with the run (default: OS user)')
    .addHelpText(
      'after',
      '\nExit code 1 when a message still failed after its attempts (its chunk is redone by --resume);\n' +
        '4 when Bronze lacks messages of the range that Silver, quarantine or its partition expiration say were published.\n' +
        'Runbook: docs/backfill.md\nExamples:\n' +
        '  offvia replay --from 2026-12-01T10:00:00Z --to 2026-12-01T11:00:00Z --dry-run\n' +
        '  offvia replay --from 2026-12-01T10:00:00Z --to 2026-12-01T11:00:00Z --rate 200\n' +
        '  offvia replay --from 2026-12-01T00:00:00Z --to 2026-12-02T00:00:00Z --filter attr.source=web\n' +
        '  offvia replay --resume offvia-replay-20261201T101500-a1b2c3',
    )
    .action(
      action(async (open, flags, opts: ReplayFlags & { by?: string }) => {
        const options = parseReplayFlags(opts, operatorName(opts.by));
        const ctx = open();
        const io = flags.json ? { ...deps.io, progressStream: undefined } : deps.io;
        const report = await replay(ctx, options, io, { ...replayDeps(ctx), now: deps.now });
        deps.io.out(flags.json ? toJson(report) : formatReplay(report));
        if (report.totals !== null && report.totals.failed > 0) return EXIT.failure;
        return report.bronzeGap === null ? EXIT.ok : EXIT.bronzeGap;
      }),
    );
}
