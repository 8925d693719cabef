// The demo's command line: booking stays the default (lab events or a file), telemetry takes its simulator flags,
// any pipeline publishes its samples (--samples), and every bad flag is one line (exit 2 in demo.sh), before any stack starts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { DemoUsageError, parseDemoArgs } from '../../../deploy/local/demo-args';
import { PIPELINES } from '../../../shared/pipelines';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const NAMES = PIPELINES.map((p) => p.name).join(', ');
const run = promisify(execFile);

describe('demo arguments', () => {
  it("defaults to the booking pipeline's lab events, or a file resolved from where the command was typed", () => {
    assert.deepEqual(parseDemoArgs([], ROOT), { run: 'lab', pipeline: 'booking', file: undefined });
    assert.deepEqual(parseDemoArgs(['sample-events.jsonl'], path.join(ROOT, 'deploy/local')), {
      run: 'lab',
      pipeline: 'booking',
      file: path.join(ROOT, 'deploy/local/sample-events.jsonl'),
    });
    assert.throws(() => parseDemoArgs(['nope.jsonl'], ROOT), /no such events file: nope.jsonl/);
  });

  it('takes the telemetry flags, with defaults', () => {
    assert.deepEqual(
      parseDemoArgs(['--pipeline', 'telemetry', '--devices', '2000', '--minutes', '3'], ROOT),
      {
        run: 'simulator',
        pipeline: 'telemetry',
        devices: 2000,
        minutes: 3,
        readingsPerMinute: 1,
        seed: 1,
        timeoutMs: undefined,
        pushRelayInFlight: undefined,
      },
    );
    const o = parseDemoArgs(
      [
        '--pipeline=telemetry',
        '--readings-per-minute',
        '4',
        '--seed',
        '9',
        '--timeout-seconds',
        '30',
      ],
      ROOT,
    );
    assert.ok(o !== 'help' && o.run === 'simulator');
    assert.equal(o.readingsPerMinute, 4);
    assert.equal(o.timeoutMs, 30_000);
  });

  it("publishes any pipeline's samples with --samples, or a file's lines, and keeps the simulator the default of telemetry", () => {
    assert.deepEqual(parseDemoArgs(['--pipeline', 'telemetry', '--samples'], ROOT), {
      run: 'samples',
      pipeline: 'telemetry',
      file: undefined,
    });
    assert.deepEqual(parseDemoArgs(['--samples'], ROOT), {
      run: 'samples',
      pipeline: 'booking',
      file: undefined,
    });
    assert.deepEqual(
      parseDemoArgs(
        ['--pipeline', 'telemetry', 'sample-events.jsonl'],
        path.join(ROOT, 'deploy/local'),
      ),
      {
        run: 'samples',
        pipeline: 'telemetry',
        file: path.join(ROOT, 'deploy/local/sample-events.jsonl'),
      },
    );
    const o = parseDemoArgs(['--pipeline', 'telemetry'], ROOT);
    assert.ok(o !== 'help' && o.run === 'simulator' && o.devices === 200 && o.minutes === 3);
  });

  for (const [argv, message] of [
    [['--pipeline', 'telemetry', '--devices', '0'], /--devices must be an integer from 1 to 50000/],
    [['--pipeline', 'telemetry', '--minutes', '3.5'], /--minutes must be an integer from 1 to 8/],
    [['--pipeline', 'weather'], new RegExp(`no pipeline "weather" \\(registered: ${NAMES}\\)`)],
    [['--devices', '10'], /--devices apply to --pipeline telemetry's simulator only/],
    [
      ['--pipeline', 'telemetry', '--samples', '--minutes', '2'],
      /--minutes apply to --pipeline telemetry's simulator only/,
    ],
    [['--samples', 'events.jsonl'], /--samples and an events file: give one or the other/],
    [['--frobnicate'], /unknown option '--frobnicate'/],
  ] as const) {
    it(`refuses ${argv.join(' ')} with one line`, () => {
      assert.throws(
        () => parseDemoArgs([...argv], ROOT),
        (e: unknown) =>
          e instanceof DemoUsageError && message.test(e.message) && !e.message.includes('\n'),
      );
    });
  }

  it('demo.sh exits 2 with one line and no stack trace for a bad flag, before starting a stack', async () => {
    const error = await run(
      'bash',
      ['deploy/local/demo.sh', '--pipeline', 'telemetry', '--devices', 'many'],
      {
        cwd: ROOT,
      },
    ).then(
      () => undefined,
      (e: unknown) => e as { code: number; stderr: string },
    );
    assert.ok(error, 'demo.sh succeeded');
    assert.equal(error.code, 2);
    assert.equal(
      error.stderr,
      "demo: option '--devices <n>' argument 'many' is invalid. --devices must be an integer from 1 to 50000 (see npm run demo -- --help)\n",
    );
  });
});
