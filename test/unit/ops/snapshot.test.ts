// `offvia snapshot` and `offvia seek` against a Google Cloud project, without one: the real Pub/Sub client with its
// request function recorded, so each test checks the API request the command sends (method and fields, as in the
// Pub/Sub v1 reference: CreateSnapshotRequest, SeekRequest, ...), plus the flags' one-line usage errors.
import assert from 'node:assert/strict';
import { PubSub } from '@google-cloud/pubsub';
import sinon from 'sinon';
import { main } from '../../../shared/ops/cli';
import type { ConnectOptions, OpsContext } from '../../../shared/ops/context';
import { EXIT } from '../../../shared/ops/errors';
import {
  parseSeekTarget,
  seekWarnings,
  type SeekReport,
  type SnapshotInfo,
} from '../../../shared/ops/snapshot';
import { BOOKING_TOPIC, INGEST_PUSH_SUBSCRIPTION } from '../../../deploy/local/resources';
import { BOOKING_PIPELINE } from '../../../shared/pipelines/booking/definition';

const PROJECT = 'offvia-prod';
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const EVENTARC = 'eventarc-europe-west1-offvia-ingest-booking-123-sub-456';

/** One recorded API call: the gapic client, its method and the request. */
interface Call {
  client: string;
  method: string;
  reqOpts: Record<string, unknown>;
}

/** What each API method answers (a response, or an error with a gRPC code). */
type Answers = Record<string, unknown>;

function cloudContext(
  env: Record<string, string>,
  pipeline: ConnectOptions['pipeline'],
): OpsContext {
  return {
    pipeline,
    mode: 'cloud',
    projectId: PROJECT,
    env,
    ingest: { maxRetryAgeMs: 45 * 60_000 },
    tables: { bronze: `${PROJECT}.offvia_bronze.raw_bookings` },
    bigquery: { query: () => Promise.resolve([[{ n: 42 }], null, { schema: { fields: [{}] } }]) },
    describe: { bigquery: 'BigQuery', firestore: 'Firestore', hint: 'check ADC' },
    close: () => Promise.resolve(),
  } as unknown as OpsContext;
}

async function run(argv: string[], answers: Answers = {}, env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const calls: Call[] = [];
  let connected = false;
  const code = await main(argv, {
    io: { out: (t) => out.push(t), err: (t) => err.push(t) },
    now: () => NOW,
    connect: (flags) => {
      connected = true;
      return cloudContext(env, flags.pipeline);
    },
    pubsub: () => {
      const pubsub = new PubSub({ projectId: PROJECT });
      sinon.stub(pubsub, 'request').callsFake((config, callback) => {
        calls.push({
          client: config.client,
          method: config.method,
          reqOpts: config.reqOpts as Record<string, unknown>,
        });
        const answer = answers[config.method];
        if (answer instanceof Error) callback(answer as never);
        else callback(null, (answer ?? {}) as never);
      });
      return pubsub;
    },
  });
  return { code, out: out.join(''), err: err.join(''), calls, connected };
}

const grpcError = (code: number, message: string) => Object.assign(new Error(message), { code });
const sub = (name: string) => `projects/${PROJECT}/subscriptions/${name}`;

describe('offvia snapshot and seek: the Pub/Sub requests', () => {
  const env = { OFFVIA_INGEST_SUBSCRIPTION: EVENTARC };

  it('uses the topic and subscription names of the local stack and the deploy', () => {
    assert.equal(BOOKING_PIPELINE.pubsub.topic, BOOKING_TOPIC);
    assert.equal(BOOKING_PIPELINE.pubsub.subscriptions.ingest, INGEST_PUSH_SUBSCRIPTION);
  });

  it('snapshot create: CreateSnapshotRequest {name, subscription}', async () => {
    const r = await run(
      ['snapshot', 'create', 'before-deploy', '--json'],
      {
        createSnapshot: {
          name: `projects/${PROJECT}/snapshots/before-deploy`,
          topic: `projects/${PROJECT}/topics/booking-events`,
          expireTime: { seconds: String(NOW / 1000 + 6 * 86_400), nanos: 0 },
        },
      },
      env,
    );
    assert.equal(r.code, EXIT.ok, r.err);
    assert.deepEqual(r.calls, [
      {
        client: 'SubscriberClient',
        method: 'createSnapshot',
        reqOpts: {
          name: `projects/${PROJECT}/snapshots/before-deploy`,
          subscription: sub(EVENTARC),
        },
      },
    ]);
    assert.equal((JSON.parse(r.out) as SnapshotInfo).expireTime, '2026-12-07T12:00:00.000Z');
  });

  it('snapshot create of a taken name: one line, exit 2', async () => {
    const r = await run(
      ['snapshot', 'create', 'before-deploy'],
      {
        createSnapshot: grpcError(6, '6 ALREADY_EXISTS: Resource already exists in the project'),
      },
      env,
    );
    assert.equal(r.code, EXIT.usage);
    assert.equal(
      r.err,
      'offvia: snapshot before-deploy exists: pick another name or delete it first',
    );
  });

  it('seek --snapshot: reads the retention (GetSubscription, GetTopic), then SeekRequest {subscription, snapshot}', async () => {
    const r = await run(
      ['seek', '--snapshot', 'before-deploy', '--json'],
      {
        getSubscription: { name: sub(EVENTARC), messageRetentionDuration: { seconds: '604800' } },
        getTopic: { name: 'booking-events', messageRetentionDuration: { seconds: '604800' } },
      },
      env,
    );
    assert.equal(r.code, EXIT.ok, r.err);
    assert.deepEqual(
      r.calls.map((c) => c.method),
      ['getSubscription', 'getTopic', 'seek'],
    );
    assert.deepEqual(r.calls[2]?.reqOpts, {
      subscription: sub(EVENTARC),
      snapshot: `projects/${PROJECT}/snapshots/before-deploy`,
    });
    assert.deepEqual((JSON.parse(r.out) as SeekReport).warnings, []);
  });

  it('seek --time: SeekRequest.time in whole seconds, Bronze counted, warnings past the retry-age guard', async () => {
    const r = await run(
      ['seek', '--time', '2026-12-01T10:00:00.750Z', '--json'],
      {
        getTopic: { messageRetentionDuration: { seconds: '604800' } },
      },
      env,
    );
    assert.equal(r.code, EXIT.ok, r.err);
    assert.deepEqual(r.calls.at(-1), {
      client: 'SubscriberClient',
      method: 'seek',
      reqOpts: {
        subscription: sub(EVENTARC),
        time: { seconds: Date.UTC(2026, 11, 1, 10) / 1000, nanos: 0 },
      },
    });
    const report = JSON.parse(r.out) as SeekReport;
    assert.equal(report.bronzeMessagesSince, 42);
    assert.match(report.warnings.join('\n'), /OFFVIA_MAX_RETRY_AGE_MS \(45 min\)/);
  });

  it('--pipeline telemetry: discovers the Eventarc subscription on the telemetry topic and seeks it', async () => {
    const eventarc = 'eventarc-europe-west1-offvia-ingest-telemetry-1-sub-2';
    const r = await run(['--pipeline', 'telemetry', 'seek', '--time', '30m', '--json'], {
      listTopicSubscriptions: [sub(eventarc), sub('telemetry-events-bronze')],
      getSubscription: { topic: `projects/${PROJECT}/topics/telemetry-events` },
    });
    assert.equal(r.code, EXIT.ok, r.err);
    assert.deepEqual(r.calls[0]?.reqOpts, { topic: `projects/${PROJECT}/topics/telemetry-events` });
    assert.equal(
      r.calls.find((c) => c.method === 'getTopic')?.reqOpts.topic,
      `projects/${PROJECT}/topics/telemetry-events`,
    );
    assert.equal(r.calls.at(-1)?.method, 'seek');
    assert.equal(r.calls.at(-1)?.reqOpts.subscription, sub(eventarc));
  });

  it("--pipeline telemetry seek of booking's subscription: refused in one line before anything moves", async () => {
    const r = await run(
      ['--pipeline', 'telemetry', 'seek', '--time', '30m'],
      {
        getSubscription: { topic: `projects/${PROJECT}/topics/booking-events` },
      },
      env,
    );
    assert.equal(r.code, EXIT.usage);
    assert.match(
      r.err,
      /^offvia: subscription eventarc-\S+ is on projects\/offvia-prod\/topics\/booking-events, not on pipeline telemetry's topic telemetry-events/,
    );
    assert.ok(!r.calls.some((c) => c.method === 'seek'));
  });

  it('seek --dry-run sends no SeekRequest', async () => {
    const r = await run(['seek', '--time', '30m', '--dry-run'], {}, env);
    assert.equal(r.code, EXIT.ok, r.err);
    assert.ok(!r.calls.some((c) => c.method === 'seek'));
    assert.match(r.out, /seek --dry-run: would seek eventarc-.* to 2026-12-01T11:30:00.000Z/);
    // A topic without retention and no retained acked messages: nothing acknowledged comes back.
    assert.match(r.out, /warning: neither the topic retains messages/);
  });

  it('seek --snapshot --dry-run of an unknown snapshot: one line, exit 3, as the seek itself', async () => {
    const known = {
      name: `projects/${PROJECT}/snapshots/before-deploy`,
      topic: `projects/${PROJECT}/topics/booking-events`,
    };
    const r = await run(
      ['seek', '--snapshot', 'before-deplyo', '--dry-run'],
      { listSnapshots: [known] },
      env,
    );
    assert.equal(r.code, EXIT.notFound, r.out);
    assert.equal(r.err, 'offvia: snapshot before-deplyo not found (expired or deleted?)');
    assert.ok(!r.calls.some((c) => c.method === 'seek'));
    const ok = await run(
      ['seek', '--snapshot', 'before-deploy', '--dry-run'],
      { listSnapshots: [known] },
      env,
    );
    assert.equal(ok.code, EXIT.ok, ok.err);
    assert.match(ok.out, /would seek eventarc-.* to snapshot before-deploy/);
  });

  it('finds the Eventarc subscription on the booking topic without OFFVIA_INGEST_SUBSCRIPTION', async () => {
    const r = await run(['snapshot', 'create', 'x-before', '--json'], {
      listTopicSubscriptions: [sub(EVENTARC), sub('booking-events-bronze')],
    });
    assert.equal(r.code, EXIT.ok, r.err);
    assert.deepEqual(r.calls[0], {
      client: 'PublisherClient',
      method: 'listTopicSubscriptions',
      reqOpts: { topic: `projects/${PROJECT}/topics/booking-events` },
    });
    assert.equal(r.calls[1]?.reqOpts.subscription, sub(EVENTARC));
    const two = await run(['snapshot', 'create', 'x-before'], {
      listTopicSubscriptions: [sub(EVENTARC), sub(`${EVENTARC}-old`)],
    });
    assert.equal(two.code, EXIT.usage);
    assert.match(
      two.err,
      /^offvia: found 2 eventarc-\* subscriptions on booking-events .*pass --subscription/,
    );
  });

  it('snapshot list: ListSnapshotsRequest {project}, only the booking topic; delete: NOT_FOUND is exit 3', async () => {
    const r = await run(['snapshot', 'list', '--json'], {
      listSnapshots: [
        {
          name: `projects/${PROJECT}/snapshots/a`,
          topic: `projects/${PROJECT}/topics/booking-events`,
        },
        { name: `projects/${PROJECT}/snapshots/b`, topic: `projects/${PROJECT}/topics/other` },
      ],
    });
    assert.deepEqual(r.calls[0]?.reqOpts, { project: `projects/${PROJECT}` });
    assert.deepEqual(
      (JSON.parse(r.out) as SnapshotInfo[]).map((s) => s.name),
      [`projects/${PROJECT}/snapshots/a`],
    );
    const gone = await run(['snapshot', 'delete', 'old-snapshot'], {
      deleteSnapshot: grpcError(5, '5 NOT_FOUND: Resource not found'),
    });
    assert.deepEqual(gone.calls[0]?.reqOpts, {
      snapshot: `projects/${PROJECT}/snapshots/old-snapshot`,
    });
    assert.equal(gone.code, EXIT.notFound);
    assert.equal(gone.err, 'offvia: snapshot old-snapshot not found');
  });
});

describe('offvia snapshot and seek: flags', () => {
  const cases: [string[], RegExp][] = [
    [['seek'], /give exactly one of --snapshot NAME and --time T/],
    [['seek', '--snapshot', 'a-b', '--time', '1h'], /give exactly one of/],
    [['seek', '--time', '2026-12-02T00:00:00Z'], /--time: in the future/],
    [['seek', '--time', 'yesterday'], /--time: expected a duration/],
    [['seek', '--time', '99999999d'], /--time: before 0001-01-01T00:00:00Z/],
    [['seek', '--snapshot', 'goog-x'], /--snapshot: expected a Pub\/Sub id/],
    [['snapshot', 'create', 'a b'], /snapshot name: expected a Pub\/Sub id/],
    [
      ['snapshot', 'create', 'ok-name', '--subscription', '1x'],
      /--subscription: expected a Pub\/Sub id/,
    ],
    [['snapshot', 'delete'], /missing required argument 'name'/],
  ];
  for (const [argv, message] of cases) {
    it(`${argv.join(' ')}: one line, exit 2, no connection`, async () => {
      const r = await run(argv);
      assert.equal(r.code, EXIT.usage, r.err);
      assert.match(r.err, message);
      assert.equal(r.err.trim().split('\n').length, 1, r.err);
      assert.equal(r.connected, false);
    });
  }

  it('a time seek truncates to the second; a duration counts back from now', () => {
    assert.deepEqual(parseSeekTarget({ time: '2026-12-01T11:59:59.999Z' }, NOW), {
      timeMs: NOW - 1000,
    });
    assert.deepEqual(parseSeekTarget({ time: '2h' }, NOW), { timeMs: NOW - 7_200_000 });
  });

  it('warns when the time is older than what is retained, and none for a snapshot', () => {
    const retention = { topicS: 3600, subscriptionS: 604_800, retainAcked: false };
    assert.match(
      seekWarnings({ timeMs: NOW - 2 * 3_600_000 }, NOW, retention, 45 * 60_000).join('\n'),
      /120 min back but messages are retained 60 min/,
    );
    assert.deepEqual(seekWarnings({ timeMs: NOW - 60_000 }, NOW, retention, 45 * 60_000), []);
    assert.deepEqual(seekWarnings({ snapshot: 's' }, NOW, retention, 45 * 60_000), []);
  });
});
