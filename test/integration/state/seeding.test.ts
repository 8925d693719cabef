// The key-groups store's seeding mode on the Firestore emulator (real client): the benchmark's seeded state is the
// state ingest writes (read back the same, fired the same), and the mode refuses what it cannot do correctly.
import assert from 'node:assert/strict';
import type { Firestore } from '@google-cloud/firestore';
import { fireWindowsDepsOf } from '../../support/booking-window-assembly';
import { fireWindows } from '../../../shared/state/fire-windows';
import { GROUP_COLLECTIONS } from '../../../shared/state/grouped-window-store';
import { seedKeyGroups } from '../../../bench/lib/seed-key-groups';
import { MIN, record, S, T, type BookingSpec } from '../../support/booking-windows';
import { firestoreBookingWindows, suiteFirestore } from '../../support/firestore-windows';

/** `n` routes `AAA-ZZZ-USD`, `AAB-ZZZ-USD`, … (origin from the index, never equal to the destination). */
function specs(n: number, prefix: string): BookingSpec[] {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXY';
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    route: [
      `${letters[Math.floor(i / 625) % 25] ?? 'A'}${letters[Math.floor(i / 25) % 25] ?? 'A'}${letters[i % 25] ?? 'A'}`,
      'ZZZ',
      'USD',
    ],
    fare: `${10 + (i % 7)}.5`,
    at: T + 1 * S + (i % 50) * S,
  }));
}

describe('integration: seeding the key-groups layout (BulkWriter)', function () {
  this.timeout(180_000);
  const db = suiteFirestore();

  it('writes the same key-group documents as ingest, which fire every on-time pane once', async () => {
    const env = { OFFVIA_WINDOW_KEY_GROUPS: '4', OFFVIA_FIRE_WINDOWS_PARTITIONS: '2' };
    const seeded = firestoreBookingWindows(db(), env);
    const ingested = firestoreBookingWindows(db(), env);
    const events = specs(120, 'seed');
    const receivedAt = (s: BookingSpec) => s.at + 2 * S;
    seeded.clock.nowMs = T + 55 * S;
    const summary = await seedKeyGroups(seeded.windows, events, receivedAt);
    assert.equal(summary.keyWindows, 120);
    assert.equal(summary.events, 120);
    for (const spec of events) {
      ingested.clock.nowMs = receivedAt(spec);
      const outcome = await record(ingested.sink, spec, receivedAt(spec), `m-${spec.id}`);
      assert.equal(outcome.kind, 'counted');
    }
    // The key-group documents, field by field, except the TTL stamp (wall clock) and the watermark each key was
    // applied under (ingest reads the watermark as it moves; the seed reads it once, before the first event).
    const docs = async (root: Firestore, w: typeof seeded) => {
      const snap = await root
        .collection(w.windows.config.firestoreRoot)
        .doc(w.windows.config.pipeline)
        .collection(GROUP_COLLECTIONS.groups)
        .get();
      return new Map(
        snap.docs.map((d) => {
          const data = d.data() as { w: Record<string, { wm: number }>; seen: string };
          const rest: Record<string, unknown> = { ...(data as Record<string, unknown>) };
          delete rest.expireAt;
          delete rest.watermark_floor_ms;
          const w2 = Object.fromEntries(
            Object.entries(data.w).map(([k, e]) => [k, { ...e, wm: 0 }]),
          );
          // Dedup ids in the order events arrived: compare them as sets.
          const seen = (data.seen.match(/.{16}/g) ?? []).sort().join('');
          return [d.id, { ...rest, w: w2, seen }];
        }),
      );
    };
    const [a, b] = await Promise.all([docs(db(), seeded), docs(db(), ingested)]);
    assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
    for (const [id, doc] of a) assert.deepEqual(doc, b.get(id), `key-group document ${id}`);

    seeded.clock.nowMs = T + 3 * MIN;
    const run = await fireWindows(fireWindowsDepsOf(seeded.windows));
    assert.equal(run.status, 'done');
    assert.equal(run.partitionsFired, 2, 'one run fires both partitions (partitions in flight)');
    const onTime = seeded.writer.gold().filter((r) => r.pane_timing === 'ON_TIME');
    assert.equal(onTime.length, 120);
    assert.equal(new Set(onTime.map((r) => r.route_key)).size, 120);
    assert.ok(onTime.every((r) => Number(r.booking_count) === 1));
  });

  it('refuses a root that already holds key-group documents, and a re-read of a seeded document', async () => {
    const { windows } = firestoreBookingWindows(db(), { OFFVIA_WINDOW_KEY_GROUPS: '1' });
    await seedKeyGroups(windows, specs(3, 'first'), (s) => s.at + 2 * S);
    await assert.rejects(
      seedKeyGroups(windows, specs(3, 'again'), (s) => s.at + 2 * S),
      /already holds key-group documents/,
    );
    // A fresh root, two callbacks writing the same key-group document: the second would not see the first's write.
    const third = firestoreBookingWindows(db(), { OFFVIA_WINDOW_KEY_GROUPS: '1' });
    const thirdGroups = third.windows.groups;
    assert.ok(thirdGroups !== undefined);
    const watermark = () => Promise.resolve(Number.MIN_SAFE_INTEGER);
    const element = (id: string) => ({
      eventId: id,
      messageId: `m-${id}`,
      value: 10_000_000_000n,
      timestampMs: T + S,
      receivedAtMs: T + 3 * S,
    });
    await assert.rejects(
      thirdGroups.seedWith(async () => {
        await third.windows.keyed.processGroupBundle(
          [{ key: 'AAA-ZZZ-USD', elements: [element('x1')] }],
          watermark,
        );
        await third.windows.keyed.processGroupBundle(
          [{ key: 'AAB-ZZZ-USD', elements: [element('x2')] }],
          watermark,
        );
      }),
      /was written earlier in this seed/,
    );
  });
});
