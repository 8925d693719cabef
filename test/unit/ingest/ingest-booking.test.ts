// The ingest's routing of booking messages: every message ends in exactly one table or the call throws; insertIds
// as designed; window state, the retry-age guard and the attempt deadline.
import assert from 'node:assert/strict';
import { RecordingWriter } from '../../support/booking-windows';
import fc from 'fast-check';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import type { Firestore } from '@google-cloud/firestore';
import { TransientError } from '../../../shared/errors';
import { FirestoreWindowStore } from '../../../shared/state/firestore-window-store';
import { GroupedFirestoreWindowStore } from '../../../shared/state/grouped-window-store';
import { FirestoreDriftStore } from '../../../shared/drift/firestore-store';
import { schemaWindowOf } from '../../../shared/schema/retry';
import type { JsonValue } from '../../../shared/windowing';
import { ingestPipelineMessage as ingestMessage } from '../../../shared/pipeline/runtime/ingest';
import {
  bookingIngestDeps,
  bookingWindowStub,
  decodedMessage,
  type MutableIngestDeps,
} from '../../support/booking-ingest';
import type { LogEntry } from '../../../shared/logging/logger';
import { HEARTBEAT_ATTRIBUTE, type DecodeResult } from '../../../shared/pubsub/message';

const NOW = Date.UTC(2026, 9, 7, 14, 11, 0);
const VALID =
  '{"booking_id":"BK-90210","passenger_id":"PAX-4821","flight_number":"OF-104","origin":"JFK","destination":"LHR","fare":"749.50","currency":"USD","status":"CONFIRMED","event_time":"2026-10-07T14:10:00Z"}';

function setup() {
  const writer = new RecordingWriter();
  const logs: LogEntry[] = [];
  const deps: MutableIngestDeps = bookingIngestDeps({ writer, logs, now: () => NOW });
  return { writer, logs, deps };
}

const msg = (data: string | Buffer, messageId?: string): DecodeResult =>
  decodedMessage(NOW, data, messageId);

describe('ingestMessage', () => {
  it('writes a valid event to Silver with insertId = event_id and the event_id column', async () => {
    const { writer, deps, logs } = setup();
    const out = await ingestMessage(msg(VALID), deps);
    assert.equal(out.destination, 'silver');
    const [row] = writer.rows.get('offvia_silver.fact_bookings') ?? [];
    assert.ok(row);
    assert.equal(
      out.destination === 'silver' && row.insertId,
      out.destination === 'silver' && out.eventId,
    );
    assert.equal(row.json.event_id, row.insertId);
    assert.equal(row.json.booking_id, 'BK-90210');
    assert.equal(row.json.source_message_id, 'm-1');
    assert.equal(writer.rows.has('offvia_quarantine.poisoned_events'), false);
    const line = logs.find((l) => l.outcome === 'silver');
    assert.equal(line?.publish_to_write_ms, 1000);
  });

  it('quarantines a rejected event with insertId = message id and its stage', async () => {
    const { writer, deps, logs } = setup();
    const out = await ingestMessage(
      msg('{"booking_id":"BK-90212", "unclosed_json...', 'm-9'),
      deps,
    );
    assert.equal(out.destination, 'quarantine');
    const [row] = writer.rows.get('offvia_quarantine.poisoned_events') ?? [];
    assert.equal(row?.insertId, 'm-9');
    assert.equal(row?.json.error_stage, 'PARSE_JSON');
    assert.equal(row?.json.raw_payload, '{"booking_id":"BK-90212", "unclosed_json...');
    assert.ok(logs.some((l) => l.outcome === 'quarantine' && l.error_stage === 'PARSE_JSON'));
  });

  it('records the contract version in Silver: "1" when the message names none or names "1"', async () => {
    for (const attributes of [{}, { contractVersion: '1' }]) {
      const { writer, deps } = setup();
      const m = msg(VALID);
      if (m.ok) Object.assign(m.message.attributes, attributes);
      assert.equal((await ingestMessage(m, deps)).destination, 'silver');
      const [row] = writer.rows.get('offvia_silver.fact_bookings') ?? [];
      assert.equal(row?.json.contract_version, '1', JSON.stringify(attributes));
    }
  });

  it('quarantines a message naming an unknown contract version at SCHEMA_VALIDATION, naming it', async () => {
    const { writer, deps } = setup();
    const m = msg(VALID, 'm-v2');
    if (m.ok) m.message.attributes.contractVersion = '2';
    const out = await ingestMessage(m, deps);
    assert.equal(out.destination, 'quarantine');
    assert.equal(writer.rows.has('offvia_silver.fact_bookings'), false);
    const [row] = writer.rows.get('offvia_quarantine.poisoned_events') ?? [];
    assert.equal(row?.json.error_stage, 'SCHEMA_VALIDATION');
    assert.equal(row?.json.error_reason, 'unknown contract version "2" (accepted: 1)');
  });

  it('quarantines a CloudEvent that carries no Pub/Sub message at PARSE_JSON, keeping its text', async () => {
    const { writer, deps } = setup();
    const out = await ingestMessage(
      { ok: false, messageId: 'ce-1', reason: 'no message', raw: '{"x":1}', attributes: {} },
      deps,
    );
    assert.equal(out.destination, 'quarantine');
    const [row] = writer.rows.get('offvia_quarantine.poisoned_events') ?? [];
    assert.equal(row?.json.raw_payload, '{"x":1}');
    assert.match(String(row?.json.error_reason), /no message/);
  });

  it('routes a row BigQuery refuses to the bad-data table with target, error and original row', async () => {
    const { writer, deps } = setup();
    writer.refuse.add('offvia_silver.fact_bookings');
    const out = await ingestMessage(msg(VALID), deps);
    assert.equal(out.destination, 'bad_data');
    const [bad] = writer.rows.get('offvia_quarantine.bad_data') ?? [];
    assert.ok(bad);
    assert.equal(bad.json.target_dest, 'offvia_silver.fact_bookings');
    assert.equal(bad.json.error, 'invalid: test');
    assert.equal(
      (JSON.parse(String(bad.json.bad_data)) as { booking_id: string }).booking_id,
      'BK-90210',
    );
    assert.equal(bad.json.source_message_id, 'm-1');
  });

  it('throws (redelivery) when the target is down, and when even the bad-data table refuses', async () => {
    const a = setup();
    a.writer.failing.add('offvia_silver.fact_bookings');
    await assert.rejects(ingestMessage(msg(VALID), a.deps), TransientError);
    assert.ok(a.logs.some((l) => l.outcome === 'retry'));
    const b = setup();
    b.writer.refuse.add('offvia_silver.fact_bookings');
    b.writer.refuse.add('offvia_quarantine.bad_data');
    await assert.rejects(ingestMessage(msg(VALID), b.deps), TransientError);
  });

  it('sends every possible payload to exactly one table, never throwing for data', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.uint8Array().map((b) => Buffer.from(b)),
          fc.json(),
        ),
        async (data) => {
          const { writer, deps } = setup();
          const out = await ingestMessage(msg(data), deps);
          const total = [...writer.rows.values()].reduce((n, rows) => n + rows.length, 0);
          assert.equal(total, 1);
          assert.ok(out.destination === 'silver' || out.destination === 'quarantine');
        },
      ),
    );
  });
});

describe('ingestMessage: window state (gold aggregates contract-valid bookings)', () => {
  /** Records which events reached window state; `fail` makes it throw as Firestore would. */
  function withWindowState() {
    const base = setup();
    const recorded: string[] = [];
    let fail = false;
    base.deps.aggregations = [
      bookingWindowStub((_key, element) => {
        if (fail)
          return Promise.reject(new TransientError('firestore apply bundle', 'unavailable'));
        recorded.push(`${element.eventId}|${element.messageId}`);
        return Promise.resolve();
      }),
    ];
    return { ...base, recorded, failNext: () => (fail = true) };
  }

  it('counts a Silver row once, after it was written', async () => {
    const { deps, recorded, writer } = withWindowState();
    const out = await ingestMessage(msg(VALID), deps);
    assert.equal(out.destination, 'silver');
    assert.equal(recorded.length, 1);
    assert.equal((writer.rows.get('offvia_silver.fact_bookings') ?? []).length, 1);
  });

  it('counts a valid booking whose row BigQuery refused (bad data), never a quarantined message', async () => {
    const { deps, recorded, writer } = withWindowState();
    writer.refuse.add('offvia_silver.fact_bookings');
    assert.equal((await ingestMessage(msg(VALID, 'm-bad'), deps)).destination, 'bad_data');
    assert.deepEqual(
      recorded.map((r) => r.split('|')[1]),
      ['m-bad'],
    );
    assert.equal((await ingestMessage(msg('{"oops"', 'm-q'), deps)).destination, 'quarantine');
    assert.equal(recorded.length, 1, 'a quarantined message reached window state');
  });

  it('throws (redelivery) when window state fails after the Silver write', async () => {
    const { deps, failNext } = withWindowState();
    failNext();
    await assert.rejects(ingestMessage(msg(VALID), deps), TransientError);
  });
});

describe('ingestMessage: watermark heartbeats', () => {
  function withHeartbeats() {
    const base = setup();
    const recorded: string[] = [];
    const heartbeats: number[] = [];
    base.deps.aggregations = [
      {
        ...bookingWindowStub((_key, element) => {
          recorded.push(element.eventId);
          return Promise.resolve();
        }),
        heartbeats: {
          recordHeartbeat: (publishTimeMs: number) => {
            heartbeats.push(publishTimeMs);
            return Promise.resolve();
          },
        },
      },
    ];
    const heartbeat = (data: string, messageId = 'hb-1'): DecodeResult => {
      const m = msg(data, messageId);
      if (m.ok) Object.assign(m.message.attributes, { [HEARTBEAT_ATTRIBUTE]: 'booking' });
      return m;
    };
    return { ...base, recorded, heartbeats, heartbeat };
  }

  it('records its publish time and writes no Silver, quarantine, bad-data or window row, whatever its body', async () => {
    const { deps, writer, recorded, heartbeats, heartbeat } = withHeartbeats();
    // A body that would be quarantined, and one that would be a valid booking: neither is looked at.
    for (const [i, body] of ['heartbeat', VALID].entries()) {
      const out = await ingestMessage(heartbeat(body, `hb-${i}`), deps);
      assert.deepEqual(out, {
        destination: 'heartbeat',
        messageId: `hb-${i}`,
        publishTimeMs: NOW - 1000,
      });
    }
    assert.deepEqual(heartbeats, [NOW - 1000, NOW - 1000]);
    assert.equal(writer.rows.size, 0, [...writer.rows.keys()].join());
    assert.deepEqual(recorded, []);
  });

  it('throws (redelivery) when the heartbeat cannot be recorded', async () => {
    const { deps, heartbeat } = withHeartbeats();
    const [a] = deps.aggregations;
    assert.ok(a);
    deps.aggregations = [
      {
        ...a,
        heartbeats: {
          recordHeartbeat: () =>
            Promise.reject(new TransientError('firestore record heartbeat', 'unavailable')),
        },
      },
    ];
    await assert.rejects(ingestMessage(heartbeat('heartbeat'), deps), TransientError);
  });
});

describe('ingestMessage: retry-age guard (OFFVIA_MAX_RETRY_AGE_MS)', () => {
  const LIMIT_MS = 45 * 60_000;
  /** The message published `ageMs` before NOW. */
  function aged(ageMs: number, data = VALID): DecodeResult {
    const decoded = msg(data, 'm-old');
    if (decoded.ok) {
      decoded.message.publishTimeMs = NOW - ageMs;
      decoded.message.publishTime = new Date(NOW - ageMs).toISOString();
    }
    return decoded;
  }

  /** The TransientError an ingest of a one-second-old message rejects with. */
  async function transientOf(deps: Parameters<typeof ingestMessage>[1]): Promise<TransientError> {
    const err = await ingestMessage(aged(1_000), deps).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof TransientError, String(err));
    return err;
  }

  it('still throws (redelivery) while the message is within the limit', async () => {
    const { writer, deps } = setup();
    writer.failing.add('offvia_silver.fact_bookings');
    await assert.rejects(ingestMessage(aged(LIMIT_MS), deps), TransientError);
    assert.equal(writer.rows.has('offvia_quarantine.bad_data'), false);
  });

  it('past the limit, a Silver outage routes the message to bad data with its bytes, and acks', async () => {
    const { writer, deps, logs } = setup();
    writer.failing.add('offvia_silver.fact_bookings');
    const out = await ingestMessage(aged(LIMIT_MS + 1), deps);
    assert.equal(out.destination, 'bad_data');
    const [bad] = writer.rows.get('offvia_quarantine.bad_data') ?? [];
    assert.ok(bad);
    assert.equal(bad.insertId, 'retry-age:m-old');
    assert.equal(bad.json.source_message_id, 'm-old');
    assert.match(String(bad.json.target_dest), /fact_bookings$/);
    assert.match(
      String(bad.json.error),
      /retry age exceeded: still failing 2700001 ms .*unavailable/,
    );
    const kept = JSON.parse(String(bad.json.bad_data)) as Record<string, unknown>;
    assert.equal(kept.raw_payload, VALID);
    // Valid UTF-8: the text is exact, no base64 copy (as in quarantine).
    assert.equal(kept.raw_payload_base64, null);
    assert.equal(kept.payload_bytes, Buffer.byteLength(VALID));
    assert.equal(kept.payload_truncated, false);
    assert.ok(
      logs.some(
        (l) => l.message === 'message still failing past the retry age, routed to bad data',
      ),
    );
  });

  it('past the limit, a window-state failure after the Silver write says the event is in Silver, uncounted', async () => {
    const { writer, deps } = setup();
    deps.aggregations = [
      bookingWindowStub(() =>
        Promise.reject(new TransientError('window transaction', 'firestore down')),
      ),
    ];
    const out = await ingestMessage(aged(LIMIT_MS + 60_000), deps);
    assert.equal(out.destination, 'bad_data');
    assert.equal(writer.rows.get('offvia_silver.fact_bookings')?.length, 1);
    const [bad] = writer.rows.get('offvia_quarantine.bad_data') ?? [];
    assert.match(
      String(bad?.json.target_dest),
      /^window state .*not counted.*event is in .*fact_bookings$/,
    );
    // Within the limit the same failure is redelivered, and the ledger makes the retry count it once.
    const young = setup();
    young.deps.aggregations = deps.aggregations;
    await assert.rejects(ingestMessage(aged(1_000), young.deps), TransientError);
  });

  it('past the limit, a message too big for one insertAll keeps a capped copy (Bronze has it whole)', async () => {
    const { writer, deps } = setup();
    writer.failing.add('offvia_quarantine.poisoned_events');
    // 9 MB of invalid JSON that is valid UTF-8, and a 6 MB body that is not UTF-8 (base64 copy kept, capped).
    for (const [id, body] of [
      ['m-big-text', Buffer.from('{"x":"' + 'é'.repeat(4_500_000))],
      ['m-big-bytes', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.alloc(6_000_000, 0x41)])],
    ] as const) {
      const decoded = aged(LIMIT_MS + 1, '{}');
      if (!decoded.ok) throw new Error('decode');
      decoded.message.messageId = id;
      decoded.message.data = body;
      const out = await ingestMessage(decoded, deps);
      assert.equal(out.destination, 'bad_data');
      const bad = (writer.rows.get('offvia_quarantine.bad_data') ?? []).find(
        (r) => r.json.source_message_id === id,
      );
      assert.ok(bad, id);
      const rowBytes = Buffer.byteLength(JSON.stringify(bad.json));
      assert.ok(rowBytes < 4 * 1024 * 1024, `${id}: bad-data row of ${rowBytes} bytes`);
      const kept = JSON.parse(String(bad.json.bad_data)) as Record<string, unknown>;
      assert.equal(kept.payload_bytes, body.length);
      assert.equal(kept.payload_truncated, true);
      const cap = loadIngestConfig({}).quarantinePayloadMaxBytes;
      if (id === 'm-big-bytes') {
        assert.deepEqual(
          Buffer.from(String(kept.raw_payload_base64), 'base64'),
          body.subarray(0, cap),
        );
      } else {
        assert.equal(kept.raw_payload_base64, null);
      }
    }
  });

  it('a dependency that hangs is a transient failure after OFFVIA_ATTEMPT_DEADLINE_MS, so the guard can act', async () => {
    const hanging = (): { deps: MutableIngestDeps; writer: RecordingWriter } => {
      const base = setup();
      base.deps.attemptDeadlineMs = 50;
      // Firestore stopped: the window-state call never answers.
      base.deps.aggregations = [bookingWindowStub(() => new Promise<void>(() => undefined))];
      return base;
    };
    // Within the retry age: 5xx (redelivery) once the deadline passed, naming the step that hung.
    const young = hanging();
    const started = Date.now();
    await assert.rejects(
      ingestMessage(aged(1_000), young.deps),
      (err: unknown) =>
        err instanceof TransientError &&
        /^window state .*no answer within 50 ms \(OFFVIA_ATTEMPT_DEADLINE_MS\)/.test(err.message),
    );
    assert.ok(Date.now() - started < 5_000, 'the deadline did not cut the hang short');
    // Past the retry age: routed to bad data and acked, although the hang never ended.
    const old = hanging();
    const out = await ingestMessage(aged(LIMIT_MS + 1), old.deps);
    assert.equal(out.destination, 'bad_data');
    const [bad] = old.writer.rows.get('offvia_quarantine.bad_data') ?? [];
    assert.match(String(bad?.json.error), /no answer within 50 ms/);
    assert.match(String(bad?.json.target_dest), /^window state .*event is in .*fact_bookings$/);
  });

  it('when every Firestore commit is aborted (contention), the deadline says so, not that a dependency hangs', async () => {
    // A Firestore whose transactions never commit: the client re-runs the callback after each aborted commit, with
    // backoff, until the attempt deadline passes (as with 10 attempts and backoff up to 60 s).
    const abortingDb = {
      collection: () => ({ doc: () => ({}) }),
      runTransaction: async (callback: (tx: unknown) => Promise<unknown>) => {
        // Gives up well after the deadline, as the client does after its last attempt.
        const until = Date.now() + 300;
        while (Date.now() < until) {
          await callback({});
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        throw Object.assign(new Error('10 ABORTED: Transaction lock timeout'), { code: 10 });
      },
    };
    const store = new FirestoreWindowStore(abortingDb as unknown as Firestore, {
      root: 'r',
      pipeline: 'p',
      parseAccumulator: (value) => value as JsonValue,
    });
    const { deps, logs } = setup();
    deps.attemptDeadlineMs = 100;
    deps.aggregations = [
      bookingWindowStub(async () => {
        await store.transact('apply bundle', () => Promise.resolve(undefined));
      }),
    ];
    const err = await transientOf(deps);
    assert.match(
      err.message,
      /no answer within 100 ms \(OFFVIA_ATTEMPT_DEADLINE_MS\): firestore apply bundle retried \d+ times after aborted commits \(contention/,
    );
    assert.doesNotMatch(err.message, /a dependency hangs/);
    const retry = logs.filter((l) => l.outcome === 'retry');
    assert.equal(retry.length, 1, 'one retry line for the delivery');
    assert.match(String(retry[0]?.error), /contention/);
  });

  it('when Firestore is unreachable (reads fail, the client retries the transaction), the deadline does not say contention', async () => {
    // Measured on the local stack with the Firestore emulator stopped: the reason said "retried 1 time after
    // aborted commits (contention on the same documents)", but no commit was ever sent.
    const unavailable = () =>
      Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });
    const ref: Record<string, unknown> = {};
    ref.collection = () => ({ doc: () => ref });
    const downDb = {
      collection: () => ({ doc: () => ref }),
      runTransaction: async (callback: (tx: unknown) => Promise<unknown>) => {
        const tx = { getAll: () => Promise.reject(unavailable()) };
        const until = Date.now() + 300;
        let last: unknown;
        while (Date.now() < until) {
          last = await callback(tx).then(
            () => undefined,
            (e: unknown) => e,
          );
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        throw last;
      },
    };
    const store = new GroupedFirestoreWindowStore(downDb as unknown as Firestore, {
      root: 'r',
      pipeline: 'p',
      parseAccumulator: (value) => value as JsonValue,
      keyGroups: 1,
      shards: 1,
      earlyDelayMs: null,
      lateDelayMs: null,
      dedupTtlMs: 1,
    });
    const { deps } = setup();
    deps.attemptDeadlineMs = 100;
    deps.aggregations = [
      bookingWindowStub(async () => {
        await store.transact('apply bundle', async (tx) => {
          await tx.read({ windows: [{ key: 'k', window: { startMs: 0, endMs: 60_000 } }] });
        });
      }),
    ];
    const err = await transientOf(deps);
    assert.doesNotMatch(err.message, /aborted commits|contention/);
    assert.match(
      err.message,
      /firestore apply bundle retried \d+ times?, the last after .*UNAVAILABLE/,
    );
  });

  it('when every commit of the schema-retry store is aborted (contention), the deadline says so too', async () => {
    // The drift gate's Firestore store on the ingest path: its `merge proposal` transaction on the table's change
    // document is what a burst of events with new fields contends on.
    const snapshot = { data: () => undefined };
    const ref: Record<string, unknown> = { get: () => Promise.resolve(snapshot) };
    ref.collection = () => ({ doc: () => ref });
    const abortingDb = {
      collection: () => ({ doc: () => ref }),
      runTransaction: async (callback: (tx: unknown) => Promise<unknown>) => {
        const tx = { get: () => Promise.resolve(snapshot), set: () => tx };
        const until = Date.now() + 300;
        while (Date.now() < until) {
          await callback(tx);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        throw Object.assign(new Error('10 ABORTED: Transaction lock timeout'), { code: 10 });
      },
    };
    const store = new FirestoreDriftStore(abortingDb as unknown as Firestore, 'r');
    const { deps } = setup();
    deps.attemptDeadlineMs = 100;
    deps.schemaDrift = {
      route: async () => {
        await store.mergeProposal({
          tableKey: 't',
          window: schemaWindowOf(NOW, 3),
          windowMinutes: 3,
          proposed: new Map(),
          maxFields: 10,
          nowMs: NOW,
        });
        return { action: 'write', extraColumns: {} };
      },
    };
    const err = await transientOf(deps);
    assert.match(
      err.message,
      /firestore merge proposal retried \d+ times after aborted commits \(contention/,
    );
    assert.doesNotMatch(err.message, /a dependency hangs/);
  });

  it('when the bad-data table is down too, the original error is thrown (redelivery, then dead letter)', async () => {
    const { writer, deps } = setup();
    writer.failing.add('offvia_silver.fact_bookings');
    writer.failing.add('offvia_quarantine.bad_data');
    await assert.rejects(
      ingestMessage(aged(LIMIT_MS * 2), deps),
      /offvia_silver\.fact_bookings: unavailable/,
    );
    const refusing = setup();
    refusing.writer.failing.add('offvia_silver.fact_bookings');
    refusing.writer.refuse.add('offvia_quarantine.bad_data');
    await assert.rejects(
      ingestMessage(aged(LIMIT_MS * 2), refusing.deps),
      /fact_bookings: unavailable/,
    );
  });

  it('a failing quarantine write of an old rejected message goes to bad data the same way', async () => {
    const { writer, deps } = setup();
    writer.failing.add('offvia_quarantine.poisoned_events');
    const out = await ingestMessage(aged(LIMIT_MS + 1, '{"broken'), deps);
    assert.equal(out.destination, 'bad_data');
    const [bad] = writer.rows.get('offvia_quarantine.bad_data') ?? [];
    assert.match(String(bad?.json.target_dest), /poisoned_events$/);
  });
});
