// The reliability harness's command line: strict flags (unknown, malformed or missing values are errors naming the
// flag, never silently the defaults), both `--flag V` and `--flag=V`, --help, distinct scenarios, --kill-every-ms.
import assert from 'node:assert/strict';
import {
  checkArgs,
  DEFAULTS,
  HELP_SHOWN_EXIT,
  parseArgs,
  USAGE,
  USAGE_EXIT,
  UsageError,
  type Settings,
} from '../../../deploy/local/reliability/args';
import { SCENARIOS } from '../../../deploy/local/reliability/scenarios';

/** The settings of a command line that must parse to a run. */
function run(...argv: string[]): Settings {
  const parsed = parseArgs(argv);
  assert.equal(parsed.kind, 'run', `${argv.join(' ')} parsed as ${parsed.kind}`);
  if (parsed.kind !== 'run') throw new Error('unreachable');
  return parsed.settings;
}

/** Asserts that `argv` is refused with a UsageError whose message matches `message`. */
function refused(argv: string[], message: RegExp): void {
  assert.throws(
    () => parseArgs(argv),
    (error: unknown) => {
      assert.ok(error instanceof UsageError, `not a UsageError: ${String(error)}`);
      assert.match(error.message, message);
      return true;
    },
    `${argv.join(' ')} was accepted`,
  );
}

describe('reliability harness: command line', () => {
  it('uses the defaults with no flags: every scenario but the opt-in ingest-down, in order', () => {
    const s = run();
    assert.equal(s.events, 10_000);
    assert.equal(s.ratePerS, 20);
    assert.equal(s.concurrency, 16);
    assert.equal(s.seed, 6);
    assert.deepEqual(
      s.scenarios.map((x) => x.name),
      [
        'redelivery',
        'function-sigkill',
        'bigquery-outage',
        'firestore-outage',
        'ingest-outage',
        'delivery-stall',
      ],
    );
    assert.deepEqual(
      run('--scenarios', 'ingest-down').scenarios.map((x) => x.name),
      ['ingest-down'],
    );
    assert.deepEqual(DEFAULTS, { events: 10_000, ratePerS: 20, concurrency: 16, seed: 6 });
  });

  it('reads every flag, as "--flag V" and as "--flag=V"', () => {
    const spaced = run(
      '--events',
      '300',
      '--rate',
      '5',
      '--concurrency',
      '4',
      '--seed',
      '9',
      '--scenarios',
      'firestore-outage,redelivery',
    );
    const inline = run(
      '--events=300',
      '--rate=5',
      '--concurrency=4',
      '--seed=9',
      '--scenarios=firestore-outage,redelivery',
    );
    for (const s of [spaced, inline]) {
      assert.equal(s.events, 300);
      assert.equal(s.ratePerS, 5);
      assert.equal(s.concurrency, 4);
      assert.equal(s.seed, 9);
      // In the order given.
      assert.deepEqual(
        s.scenarios.map((x) => x.name),
        ['firestore-outage', 'redelivery'],
      );
    }
  });

  it('refuses a value that is not a positive integer, naming the flag and the value', () => {
    refused(['--events', '0'], /^--events must be a positive integer, got "0"$/);
    refused(['--events', 'abc'], /^--events must be a positive integer, got "abc"$/);
    refused(['--events', '1.5'], /^--events must be a positive integer, got "1.5"$/);
    refused(['--events', '1e3'], /^--events must be a positive integer, got "1e3"$/);
    refused(['--events', ' 5'], /^--events must be a positive integer/);
    refused(['--events=-3'], /^--events must be a positive integer, got "-3"$/);
    refused(['--events', '99999999999999999999'], /^--events must be a positive integer/);
    refused(['--rate', '-1'], /^--rate must be a positive integer, got "-1"$/);
    refused(['--concurrency', '0'], /^--concurrency must be a positive integer/);
    refused(['--seed', 'x'], /^--seed must be a positive integer/);
    refused(['--kill-every-ms', '0'], /^--kill-every-ms must be a positive integer/);
  });

  it('refuses an unknown flag, naming it (also in the --flag=V form)', () => {
    refused(['--event', '300'], /^unknown flag --event$/);
    refused(['--events', '5', '--verbose'], /^unknown flag --verbose$/);
    refused(['--evnts=300'], /^unknown flag --evnts$/);
    refused(['-e', '300'], /^unknown flag -e$/);
  });

  it('refuses a positional argument', () => {
    refused(['300'], /^unexpected argument "300"/);
    refused(['--events', '5', 'redelivery'], /^unexpected argument "redelivery"/);
  });

  it('refuses a flag without its value: at the end, before another flag, or empty after =', () => {
    refused(['--rate', '10', '--events'], /^--events needs a value$/);
    refused(['--events', '--rate', '10'], /^--events needs a value$/);
    refused(['--scenarios'], /^--scenarios needs a value$/);
    refused(['--events='], /^--events must be a positive integer, got ""$/);
  });

  it('refuses a flag given twice', () => {
    refused(['--events', '5', '--events=6'], /^--events is given twice$/);
  });

  it('refuses an empty scenario list, an unknown or empty name, and a name given twice', () => {
    refused(['--scenarios', ''], /^--scenarios is empty/);
    refused(['--scenarios='], /^--scenarios is empty/);
    refused(
      ['--scenarios', 'nosuch'],
      /^unknown scenario "nosuch" in --scenarios \(one of redelivery, /,
    );
    refused(['--scenarios', 'redelivery,'], /^unknown scenario "" in --scenarios/);
    refused(['--scenarios', 'redelivery,redelivery'], /^scenario redelivery is given twice/);
    refused(
      ['--scenarios', 'redelivery,bigquery-outage,redelivery'],
      /^scenario redelivery is given twice/,
    );
  });

  it('returns help for --help or -h anywhere, whatever else is given', () => {
    assert.deepEqual(parseArgs(['--help']), { kind: 'help' });
    assert.deepEqual(parseArgs(['-h']), { kind: 'help' });
    assert.deepEqual(parseArgs(['--events', 'abc', '--help']), { kind: 'help' });
    refused(['--help=yes'], /^--help takes no value/);
  });

  it('--kill-every-ms overrides the SIGKILL interval of function-sigkill only', () => {
    const s = run('--kill-every-ms', '2000', '--scenarios', 'redelivery,function-sigkill');
    const kill = s.scenarios.find((x) => x.name === 'function-sigkill');
    assert.deepEqual(kill?.fault, { kind: 'kill-function', everyMs: 2000 });
    assert.match(kill?.description ?? '', /every 1–3 s/);
    assert.deepEqual(s.scenarios[0], SCENARIOS[0]);
    // The shared scenario table is not changed.
    assert.deepEqual(SCENARIOS[1]?.fault, { kind: 'kill-function', everyMs: 5_000 });
    assert.deepEqual(run('--kill-every-ms=750').scenarios[1]?.fault, {
      kind: 'kill-function',
      everyMs: 750,
    });
    // Without the flag: the scenario's own interval.
    assert.deepEqual(run().scenarios[1]?.fault, { kind: 'kill-function', everyMs: 5_000 });
    refused(
      ['--kill-every-ms', '2000', '--scenarios', 'redelivery'],
      /^--kill-every-ms applies to the function-sigkill scenario, which --scenarios leaves out$/,
    );
  });

  it('documents every flag in the usage text', () => {
    for (const flag of [
      '--events',
      '--rate',
      '--concurrency',
      '--scenarios',
      '--seed',
      '--kill-every-ms',
      '--help',
    ])
      assert.ok(USAGE.includes(flag), flag);
    for (const line of USAGE.split('\n')) assert.ok(line.length <= 100, line);
  });
});

describe('reliability harness: the check before the stack starts', () => {
  function check(...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const status = checkArgs(
      argv,
      (t) => out.push(t),
      (t) => err.push(t),
    );
    return { status, out: out.join('\n'), err: err.join('\n') };
  }

  it('returns 0 and prints nothing for good flags', () => {
    assert.deepEqual(check('--events', '500', '--rate=5'), { status: 0, out: '', err: '' });
  });

  it('prints the usage on stdout and returns HELP_SHOWN_EXIT for --help', () => {
    const r = check('--help');
    assert.equal(r.status, HELP_SHOWN_EXIT);
    assert.notEqual(HELP_SHOWN_EXIT, 0);
    assert.equal(r.out, USAGE);
    assert.equal(r.err, '');
  });

  it('prints one line naming the problem, then the usage, and returns 2: no stack trace', () => {
    const r = check('--events', 'abc');
    assert.equal(r.status, USAGE_EXIT);
    assert.equal(USAGE_EXIT, 2);
    assert.equal(r.out, '');
    const [first, ...rest] = r.err.split('\n');
    assert.equal(first, 'reliability: --events must be a positive integer, got "abc"');
    assert.equal(rest.join('\n'), `\n${USAGE}`);
    assert.doesNotMatch(r.err, /^\s+at /m);
  });
});

describe('reliability harness: --down-ms', () => {
  it('sets the ingest-down outage and refuses it without that scenario', () => {
    const parsed = parseArgs(['--scenarios', 'ingest-down', '--down-ms', '480000']);
    assert.equal(parsed.kind, 'run');
    const [s] = parsed.kind === 'run' ? parsed.settings.scenarios : [];
    assert.equal(s?.fault.kind === 'outage' && s.fault.downMs, 480_000);
    assert.equal(s?.noneDroppedLate, true);
    assert.match(s?.description ?? '', /480 s/);
    assert.throws(
      () => parseArgs(['--scenarios', 'redelivery', '--down-ms', '1000']),
      /ingest-down/,
    );
  });
});
