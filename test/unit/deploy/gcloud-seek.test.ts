// What the deploy plan sets and says for `offvia seek`: the booking topic's retention from --topic-retention, read
// back after the update, and the ingest subscription's name printed for OFFVIA_INGEST_SUBSCRIPTION.
import assert from 'node:assert/strict';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import type { DeployOptions } from '../../../deploy/gcloud/options';
import { commandsOf } from '../../../deploy/gcloud/steps';
import { OPTIONS as TEST_OPTIONS } from '../../support/deploy-plans';

/** The unit tests' options with a 3-day topic retention (and a ledger TTL that outlives it) and a channel. */
const OPTIONS: DeployOptions = {
  ...TEST_OPTIONS,
  notificationChannels: ['projects/offvia-test/notificationChannels/1'],
  topicRetention: '3d',
  envOverrides: { OFFVIA_WINDOW_LEDGER_TTL_MS: String(8 * 86_400_000) },
};

describe('deploy plan: what offvia seek needs', () => {
  const plan = buildDeployPlan(
    OPTIONS,
    readRepoFacts(REPO_ROOT, OPTIONS.project, OPTIONS.bqLocation),
  );

  it('sets the topic retention from --topic-retention and reads it back, failing the run otherwise', () => {
    const topicCommands = plan.steps
      .flatMap(commandsOf)
      .filter((c) => c.includes('booking-events'));
    assert.ok(
      topicCommands.some(
        (c) =>
          c.join(' ').startsWith('gcloud pubsub topics update') &&
          c.includes('--message-retention-duration=3d'),
      ),
    );
    const check = plan.steps.find(
      (s) => s.kind === 'ensure' && /what offvia seek --time replays/.test(s.title),
    );
    assert.ok(check?.kind === 'ensure' && check.probe.kind === 'line');
    assert.equal(check.probe.line, '259200s');
    assert.deepEqual(check.probe.command.slice(0, 5), [
      'gcloud',
      'pubsub',
      'topics',
      'describe',
      'booking-events',
    ]);
    assert.match(check.absent?.join(' ') ?? '', /exit 1/);
  });

  it('says so in its header and prints the ingest subscription after the functions', () => {
    assert.ok(
      plan.header.some((h) => /booking-events retains messages 3d .*offvia seek --time/.test(h)),
    );
    const titles = plan.steps.map((s) => s.title);
    const print = titles.findIndex((t) => /for offvia snapshot and offvia seek/.test(t));
    const captured = titles.findIndex((t) =>
      /Pub\/Sub subscription Eventarc created for .*ingest/.test(t),
    );
    assert.ok(captured >= 0 && print > captured, `${captured} ${print}`);
    const step = plan.steps[print];
    assert.ok(step?.kind === 'run');
    assert.equal(step.command.at(-1), '${INGEST_BOOKING_SUBSCRIPTION}');
  });
});
