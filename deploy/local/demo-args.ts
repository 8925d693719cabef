// The demo's command line (`npm run demo -- [FILE] [--pipeline NAME] [--samples] [--devices N --minutes M …]`),
// parsed with commander before any stack starts: demo.sh runs this file alone first, so a bad flag is one line and
// exit 2.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { PIPELINES } from '../../shared/pipelines';
import type { TelemetryDemoOptions } from './telemetry-demo/run';

/** Exit code of a usage error (bad flag or value), as every command of the project. */
export const USAGE_EXIT = 2;

/**
 * What the demo runs: booking's lab acceptance test (`lab`), telemetry's simulator (`simulator`), or any pipeline's
 * sample messages or a file's lines with where each ended (`samples`, deploy/local/sample-demo.ts).
 */
export type DemoOptions =
  | {
      readonly run: 'samples';
      readonly pipeline: string;
      /** An events file (absolute path, one message data per non-blank line), or undefined for the samples. */
      readonly file: string | undefined;
    }
  | {
      readonly run: 'lab';
      readonly pipeline: 'booking';
      /** An events file (absolute path), or undefined for the lab's three messages. */
      readonly file: string | undefined;
    }
  | ({ readonly run: 'simulator'; readonly pipeline: 'telemetry' } & TelemetryDemoOptions);

/** A usage error: one line for stderr; the caller exits {@link USAGE_EXIT}. */
export class DemoUsageError extends Error {}

function intIn(name: string, min: number, max: number) {
  return (raw: string): number => {
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
    }
    return value;
  };
}

/** The simulator's flags, in help order: flag, value name, help, smallest and largest value. */
const TELEMETRY_FLAGS = [
  ['--devices', 'n', 'telemetry: devices (1-50000)', 1, 50_000],
  ['--minutes', 'm', 'telemetry: minutes of readings (1-8)', 1, 8],
  ['--readings-per-minute', 'r', 'telemetry: readings per device and minute (1-6)', 1, 6],
  ['--seed', 's', 'telemetry: seed of the simulation', 0, 2 ** 32 - 1],
  [
    '--timeout-seconds',
    's',
    'telemetry: longest wait for the messages and for the panes (default from the run size)',
    1,
    86_400,
  ],
  [
    '--push-relay',
    'n',
    "telemetry: deliver with up to n in flight through a relay instead of the emulator's push (about 2)",
    1,
    1000,
  ],
] as const;

/** `--readings-per-minute` → `readingsPerMinute`, commander's option key. */
const optionKey = (flag: string) =>
  flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Parses the demo's arguments (without `node` and the script). `baseDir` is where relative events files are
 * resolved (where the user typed the command).
 * @throws DemoUsageError with one line for a bad flag, a bad value, a flag of the other pipeline or a missing file
 */
export function parseDemoArgs(argv: readonly string[], baseDir: string): DemoOptions | 'help' {
  let usage: string | undefined;
  let help = '';
  const program = new Command('npm run demo --')
    .description(
      'Start a throw-away local stack, publish events, wait, check the outcome, stop the stack.\n' +
        "booking (default): the lab's three messages, or FILE (one message per non-blank line).\n" +
        'telemetry: seed the device directory, publish simulated readings of N devices over the M minutes ' +
        'before now, check Silver, the dead-letter table and the gold panes against an independent computation.\n' +
        'any pipeline with --samples (the default of a pipeline without a demo of its own), or FILE: publish the ' +
        "definition's sample messages (or the file's lines) and show where each ended.",
    )
    .argument('[file]', 'events file, one message data per non-blank line')
    .option('--samples', "publish the pipeline's sample messages and check where each ended")
    .option(
      '--pipeline <name>',
      `the pipeline (${PIPELINES.map((p) => p.name).join(', ')})`,
      'booking',
    )
    .exitOverride()
    .configureOutput({
      writeOut: (s) => {
        help += s;
      },
      writeErr: (s) => {
        help += s;
      },
      outputError: (s) => {
        usage = s
          .trim()
          .replace(/^error: /, '')
          .replace(/\s*\n\s*/g, ' ');
      },
    });
  for (const [flag, value, help, min, max] of TELEMETRY_FLAGS) {
    program.option(`${flag} <${value}>`, help, intIn(flag, min, max));
  }
  try {
    program.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.code === 'commander.helpDisplayed') {
      process.stdout.write(help);
      return 'help';
    }
    if (error instanceof CommanderError) throw new DemoUsageError(usage ?? error.message);
    throw error;
  }
  const o = program.opts<{ pipeline: string; samples?: true } & Partial<Record<string, number>>>();
  const file = program.args[0];
  const given = TELEMETRY_FLAGS.map(([flag]) => flag).filter((f) => o[optionKey(f)] !== undefined);
  if (!PIPELINES.some((p) => p.name === o.pipeline)) {
    throw new DemoUsageError(
      `no pipeline ${JSON.stringify(o.pipeline)} (registered: ${PIPELINES.map((p) => p.name).join(', ')})`,
    );
  }
  if (given.length > 0 && (o.pipeline !== 'telemetry' || o.samples || file !== undefined)) {
    throw new DemoUsageError(`${given.join(', ')} apply to --pipeline telemetry's simulator only`);
  }
  if (o.samples && file !== undefined) {
    throw new DemoUsageError('--samples and an events file: give one or the other');
  }
  const resolved = file === undefined ? undefined : path.resolve(baseDir, file);
  if (file !== undefined && resolved !== undefined && !existsSync(resolved)) {
    throw new DemoUsageError(`no such events file: ${file} (looked for ${resolved})`);
  }
  if (o.pipeline === 'booking' && !o.samples)
    return { run: 'lab', pipeline: 'booking', file: resolved };
  if (o.pipeline === 'telemetry' && !o.samples && file === undefined) {
    return {
      run: 'simulator',
      pipeline: 'telemetry',
      devices: o.devices ?? 200,
      minutes: o.minutes ?? 3,
      readingsPerMinute: o.readingsPerMinute ?? 1,
      seed: o.seed ?? 1,
      timeoutMs: o.timeoutSeconds === undefined ? undefined : o.timeoutSeconds * 1000,
      pushRelayInFlight: o.pushRelay,
    };
  }
  return { run: 'samples', pipeline: o.pipeline, file: resolved };
}

/** The one line a usage error prints, with the way to the help. */
export function usageLine(error: DemoUsageError): string {
  return `demo: ${error.message} (see npm run demo -- --help)\n`;
}

// Run alone (demo.sh does, before starting a stack): checks the arguments and exits 0, or 2 with one line.
if (require.main === module) {
  const [baseDir = process.cwd(), ...argv] = process.argv.slice(2);
  try {
    const parsed = parseDemoArgs(argv, baseDir);
    // `help` was printed: nothing to run, and demo.sh must not start a stack for it.
    process.exit(parsed === 'help' ? 3 : 0);
  } catch (error) {
    if (!(error instanceof DemoUsageError)) throw error;
    process.stderr.write(usageLine(error));
    process.exit(USAGE_EXIT);
  }
}
