// The harness's fault injection: it stops when the scenario is done, reports what it did, and never rejects when
// stack.sh fails (the harness must still print its report, marked FAILED). stack.sh is a sinon stub.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { injectFault, type FaultIo } from '../../../deploy/local/reliability/faults';
import { SCENARIOS, type Scenario } from '../../../deploy/local/reliability/scenarios';

function scenario(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new Error(`no scenario ${name}`);
  return s;
}

/** Stubbed io: sleeps resolve at once (counting the time asked for), stack calls are recorded. */
function io(
  stackImpl: (command: string, service: string) => Promise<void> = () => Promise.resolve(),
) {
  const slept: number[] = [];
  const lines: string[] = [];
  const stack = sinon.spy(stackImpl);
  const value: FaultIo = {
    stack,
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
    log: (text) => lines.push(text),
  };
  return { value, stack, slept, lines };
}

describe('reliability harness: fault injection', () => {
  it('kills and restarts the function until the scenario is done, and counts the kills', async () => {
    const fake = io();
    let checks = 0;
    const outcome = await injectFault(
      scenario('function-sigkill'),
      10_000,
      () => ++checks > 6,
      fake.value,
    );
    const calls = fake.stack.getCalls().map((c) => `${c.args[0]} ${c.args[1]}`);
    // done() is asked before and after each sleep: 6 checks → 3 kill/start pairs.
    assert.deepEqual(calls, [
      'kill fn-ingestBooking',
      'start fn-ingestBooking',
      'kill fn-ingestBooking',
      'start fn-ingestBooking',
      'kill fn-ingestBooking',
      'start fn-ingestBooking',
    ]);
    assert.match(outcome.summary, /SIGKILLed 3 times/);
    assert.equal(outcome.error, undefined);
    for (const ms of fake.slept) assert.ok(ms >= 2_500 && ms <= 7_500, `slept ${ms} ms`);
  });

  it('stops a service for the outage and starts it again', async () => {
    const fake = io();
    const outcome = await injectFault(
      scenario('bigquery-outage'),
      100_000,
      () => false,
      fake.value,
    );
    assert.deepEqual(
      fake.stack.getCalls().map((c) => `${c.args[0]} ${c.args[1]}`),
      ['stop bigquery-emulator', 'start bigquery-emulator'],
    );
    assert.deepEqual(fake.slept, [30_000, 30_000]); // 30 % of 100 s into publishing, then 30 s down
    assert.equal(outcome.error, undefined);
  });

  it('returns the failure instead of rejecting when a service will not start again', async () => {
    const fake = io((command) =>
      command === 'start'
        ? Promise.reject(new Error('stack.sh: firestore-emulator did not start'))
        : Promise.resolve(),
    );
    const outcome = await injectFault(
      scenario('firestore-outage'),
      10_000,
      () => false,
      fake.value,
    );
    assert.match(
      outcome.error ?? '',
      /start of firestore-emulator: stack\.sh: firestore-emulator did not start/,
    );
    assert.match(outcome.summary, /fault injection failed at the start of firestore-emulator/);
    assert.ok(fake.lines.some((l) => l.includes('FAILED')));
  });

  it('returns the failure when a kill fails, after the kills that worked', async () => {
    let kills = 0;
    const fake = io((command) =>
      command === 'kill' && ++kills === 2
        ? Promise.reject(new Error('no such process group'))
        : Promise.resolve(),
    );
    const outcome = await injectFault(
      scenario('function-sigkill'),
      10_000,
      () => false,
      fake.value,
    );
    assert.match(outcome.error ?? '', /SIGKILL of fn-ingestBooking: no such process group/);
    assert.match(outcome.summary, /after 1 kills/);
  });

  it('injects nothing for the redelivery scenario', async () => {
    const fake = io();
    const outcome = await injectFault(scenario('redelivery'), 10_000, () => false, fake.value);
    assert.equal(fake.stack.callCount, 0);
    assert.equal(outcome.summary, 'no fault injected');
  });
});
