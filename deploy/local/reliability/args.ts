// The reliability harness's command line: strict parsing of its flags, shared by the harness itself and by the check
// `deploy/local/reliability.sh` runs before it starts the stack (so a typo fails in a second, not after the install
// and the stack's start-up).
import { killSpan, SCENARIOS, type Scenario } from './scenarios';

/** A mistake in how the harness was invoked: reported as one line (and the usage), exit status 2, no stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** Whether the usage text is worth printing after the message (not for a missing environment variable). */
  readonly showUsage: boolean;

  constructor(message: string, options: { showUsage?: boolean } = {}) {
    super(message);
    this.showUsage = options.showUsage ?? true;
  }
}

/** Exit status for a usage error. */
export const USAGE_EXIT = 2;

/** The harness's settings, from the command line. */
export interface Settings {
  /** Events published per scenario (a re-published copy is extra). */
  events: number;
  /** Messages published per second. */
  ratePerS: number;
  /** Deliveries in flight at once. */
  concurrency: number;
  /** The scenarios to run, in the order given; distinct, at least one. */
  scenarios: Scenario[];
  /** Seed of the event stream. */
  seed: number;
}

/** What the command line asks for: the usage text, or a run. */
export type Parsed = { kind: 'help' } | { kind: 'run'; settings: Settings };

export const DEFAULTS = {
  events: 10_000,
  ratePerS: 20,
  concurrency: 16,
  seed: 6,
} as const;

const DEFAULT_SCENARIOS = SCENARIOS.filter((s) => s.optIn !== true);
const SCENARIO_NAMES = DEFAULT_SCENARIOS.map((s) => s.name);

export const USAGE = `usage: npm run reliability -- [flags]
       (or: bash deploy/local/reliability.sh [flags], from the repository root)

Starts a local stack, runs the reliability scenarios against it and prints one report.

  --events N          events published per scenario (default ${DEFAULTS.events})
  --rate R            messages published per second (default ${DEFAULTS.ratePerS})
  --concurrency C     deliveries in flight at once (default ${DEFAULTS.concurrency})
  --scenarios a,b     scenarios to run, in this order, each at most once
                      (default all but the opt-in ${SCENARIOS.filter((s) => s.optIn === true)
                        .map((s) => s.name)
                        .join(',')}, in this order:
                      ${SCENARIO_NAMES.slice(0, 3).join(',')},
                      ${SCENARIO_NAMES.slice(3).join(',')})
  --seed S            seed of the event stream (default ${DEFAULTS.seed})
  --kill-every-ms N   function-sigkill: a SIGKILL every N x 0.5 to N x 1.5 ms
                      (default: the scenario's own 5000)
  --down-ms N         ingest-down: how long ingestBooking stays down, ms
                      (default: the scenario's own 900000)
  -h, --help          print this and exit

Every number is a positive integer. A flag takes its value as "--flag V" or "--flag=V".`;

/** The flags that take a value. */
const VALUE_FLAGS = [
  '--events',
  '--rate',
  '--concurrency',
  '--scenarios',
  '--seed',
  '--kill-every-ms',
  '--down-ms',
] as const;
type ValueFlag = (typeof VALUE_FLAGS)[number];

const isValueFlag = (flag: string): flag is ValueFlag =>
  (VALUE_FLAGS as readonly string[]).includes(flag);

function positiveInt(flag: string, raw: string): number {
  const n = Number(raw);
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

function scenarioList(raw: string): Scenario[] {
  if (raw === '')
    throw new UsageError(`--scenarios is empty (one or more of ${SCENARIO_NAMES.join(', ')})`);
  const seen = new Set<string>();
  return raw.split(',').map((name) => {
    const s = SCENARIOS.find((x) => x.name === name);
    if (!s)
      throw new UsageError(
        `unknown scenario ${JSON.stringify(name)} in --scenarios (one of ${SCENARIO_NAMES.join(', ')})`,
      );
    // Each scenario's rows are found by its name and currency: two copies would read each other's rows.
    if (seen.has(name)) throw new UsageError(`scenario ${name} is given twice in --scenarios`);
    seen.add(name);
    return s;
  });
}

/**
 * Parses the harness's arguments (without `node` and the script): the flags of {@link USAGE}, each at most once.
 * `--help` / `-h` returns `{ kind: 'help' }` whatever else is given; `--kill-every-ms` returns a copy of the
 * function-sigkill scenario with that interval and description, `--down-ms` one of ingest-down with that outage.
 * @throws UsageError naming the culprit for: an unknown flag or a positional argument; a flag without its value (at
 * the end, followed by another `--flag`, or `--flag=` for a number); a flag given twice; a value that is not a
 * positive integer; an empty `--scenarios`, an unknown or repeated scenario name; `--kill-every-ms` when
 * function-sigkill is not among the scenarios; `--down-ms` when ingest-down is not.
 */
export function parseArgs(argv: readonly string[]): Parsed {
  if (argv.includes('--help') || argv.includes('-h')) return { kind: 'help' };
  const values = new Map<ValueFlag, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = flag === arg ? undefined : arg.slice(eq + 1);
    if (flag === '--help') throw new UsageError(`--help takes no value, got ${arg}`);
    if (!isValueFlag(flag)) {
      if (arg.startsWith('-')) throw new UsageError(`unknown flag ${flag}`);
      throw new UsageError(`unexpected argument ${JSON.stringify(arg)} (flags start with --)`);
    }
    if (values.has(flag)) throw new UsageError(`${flag} is given twice`);
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      // A negative number ("-1") is a (bad) value; "--rate" after "--events" is a missing one.
      if (next === undefined || next.startsWith('--'))
        throw new UsageError(`${flag} needs a value`);
      value = next;
      i++;
    }
    values.set(flag, value);
  }

  const int = (flag: ValueFlag, fallback: number): number => {
    const raw = values.get(flag);
    return raw === undefined ? fallback : positiveInt(flag, raw);
  };
  const events = int('--events', DEFAULTS.events);
  const ratePerS = int('--rate', DEFAULTS.ratePerS);
  const concurrency = int('--concurrency', DEFAULTS.concurrency);
  const seed = int('--seed', DEFAULTS.seed);
  const rawScenarios = values.get('--scenarios');
  let scenarios = rawScenarios === undefined ? [...DEFAULT_SCENARIOS] : scenarioList(rawScenarios);
  const rawKill = values.get('--kill-every-ms');
  if (rawKill !== undefined) {
    const everyMs = positiveInt('--kill-every-ms', rawKill);
    if (!scenarios.some((s) => s.fault.kind === 'kill-function'))
      throw new UsageError(
        '--kill-every-ms applies to the function-sigkill scenario, which --scenarios leaves out',
      );
    scenarios = scenarios.map((s) =>
      s.fault.kind === 'kill-function'
        ? {
            ...s,
            description: `the Functions Framework serving ingestBooking SIGKILLed every ${killSpan(everyMs)} and restarted`,
            fault: { kind: 'kill-function', everyMs },
          }
        : s,
    );
  }
  const rawDown = values.get('--down-ms');
  if (rawDown !== undefined) {
    const downMs = positiveInt('--down-ms', rawDown);
    if (!scenarios.some((s) => s.name === 'ingest-down'))
      throw new UsageError(
        '--down-ms applies to the ingest-down scenario, which --scenarios leaves out',
      );
    scenarios = scenarios.map((s) =>
      s.name === 'ingest-down' && s.fault.kind === 'outage'
        ? {
            ...s,
            description: s.description.replace('15 min', `${downMs / 1000} s`),
            fault: { ...s.fault, downMs },
          }
        : s,
    );
  }
  return { kind: 'run', settings: { events, ratePerS, concurrency, scenarios, seed } };
}

/**
 * Status of {@link checkArgs} when it printed the usage: nothing to run, and `reliability.sh` exits 0 without
 * starting the stack. (0 means the arguments are good and the run goes ahead; {@link USAGE_EXIT}, a usage error.)
 */
export const HELP_SHOWN_EXIT = 10;

/** Prints a usage error as one line (and the usage text) on `err`. */
export function reportUsageError(error: UsageError, err: (text: string) => void): void {
  err(`reliability: ${error.message}`);
  if (error.showUsage) err(`\n${USAGE}`);
}

/**
 * The check `reliability.sh` runs before the stack: parses `argv`, prints the usage (`out`) or the error (`err`),
 * and returns the exit status: 0 (go ahead), {@link HELP_SHOWN_EXIT} or {@link USAGE_EXIT}. Other errors propagate.
 */
export function checkArgs(
  argv: readonly string[],
  out: (text: string) => void,
  err: (text: string) => void,
): number {
  try {
    if (parseArgs(argv).kind === 'help') {
      out(USAGE);
      return HELP_SHOWN_EXIT;
    }
    return 0;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    reportUsageError(error, err);
    return USAGE_EXIT;
  }
}
