// Seeding the key-groups layout's window state directly (benchmarks): the booking pipeline's own core and document
// builders compute the state of "these bookings were received", and a BulkWriter writes the resulting key-group
// documents, instead of one ingest transaction per bundle (50,000 keys: about a minute instead of 40).
import { routeKey } from '../../shared/aggregates/route-key';
import type { BookingWindows } from '../../test/support/booking-window-assembly';
import type { WindowElement } from '../../shared/state/keyed-windows';
import { windowId, type IntervalWindow } from '../../shared/windowing';
import { bookingEvent, type BookingSpec } from '../../test/support/booking-windows';

/** What a seed wrote. */
export interface SeedSummary {
  /** Distinct (key, window)s seeded. */
  readonly keyWindows: number;
  /** Events applied. */
  readonly events: number;
  /** Key-group (window, group, shard) buckets, one callback each. */
  readonly buckets: number;
  /** Wall clock of the seed itself and of the read-back check, ms. */
  readonly seedMs: number;
  readonly verifyMs: number;
}

interface Bucket {
  readonly windows: readonly IntervalWindow[];
  readonly group: number;
  readonly shard: number;
  readonly byKey: Map<string, WindowElement<bigint>[]>;
}

/**
 * Seeds `specs` (valid bookings, each received at `receivedAtMs(spec)`, epoch ms) into an empty key-groups root: the
 * events are bucketed by (windows, key group, event shard) as ingest bundles them, each bucket is applied by
 * `KeyedWindows.processGroupBundle` under the store's seeding mode (`GroupedFirestoreWindowStore.seedWith`: the
 * layout's own documents, queued on a BulkWriter), the watermark observes the newest event as ingest would, and then
 * every seeded key is read back through ordinary store transactions: each (key, window) must exist with its pane
 * still open (EARLY, nothing emitted) and a contribution counting exactly the events put there, and every event's
 * dedup id must be in its shard document.
 * @throws Error when the pipeline is not in the key-groups layout, the root is not empty, an event is not counted
 * (duplicate or dropped) or fires a pane while seeding, or the read-back differs from what was seeded
 */
export async function seedKeyGroups(
  windows: BookingWindows,
  specs: readonly BookingSpec[],
  receivedAtMs: (spec: BookingSpec) => number,
): Promise<SeedSummary> {
  const groups = windows.groups;
  if (groups === undefined)
    throw new Error('seedKeyGroups: the pipeline is not in the key-groups layout');
  const buckets = new Map<string, Bucket>();
  let maxEventMs = Number.NEGATIVE_INFINITY;
  let maxReceivedMs = Number.NEGATIVE_INFINITY;
  for (const spec of specs) {
    const event = bookingEvent(spec);
    const key = routeKey({
      origin: event.row.origin_airport,
      destination: event.row.destination_airport,
      currency: event.row.currency,
    });
    const element: WindowElement<bigint> = {
      eventId: event.eventId,
      messageId: `m-${spec.id}`,
      value: event.fareScaled,
      timestampMs: event.eventTimeMs,
      receivedAtMs: receivedAtMs(spec),
    };
    const assigned = windows.keyed.assign(element.timestampMs);
    const group = groups.groupOf(key);
    const shard = windows.keyed.eventShard(element.eventId);
    const id = `${assigned.map(windowId).join(',')}|${group}|${shard}`;
    const bucket: Bucket = buckets.get(id) ?? {
      windows: assigned,
      group,
      shard,
      byKey: new Map<string, WindowElement<bigint>[]>(),
    };
    bucket.byKey.set(key, [...(bucket.byKey.get(key) ?? []), element]);
    buckets.set(id, bucket);
    maxEventMs = Math.max(maxEventMs, element.timestampMs);
    maxReceivedMs = Math.max(maxReceivedMs, element.receivedAtMs);
  }
  const seedStarted = Date.now();
  // The seed is one point in time: one fresh watermark read serves every bundle (ingest reads it per new window).
  const watermarkAtSeed = await windows.tracker.watermarkMs(maxReceivedMs, true);
  const watermark = () => Promise.resolve(watermarkAtSeed);
  await groups.seedWith(async () => {
    for (const bucket of buckets.values()) {
      const bundles = [...bucket.byKey].map(([key, elements]) => ({ key, elements }));
      const results = await windows.keyed.processGroupBundle(bundles, watermark);
      results.forEach((r, i) => {
        const notCounted = r.outcomes.find((o) => o.kind !== 'counted');
        if (notCounted !== undefined) {
          throw new Error(
            `seedKeyGroups: an event of ${bundles[i]?.key ?? '?'} was ${notCounted.kind}, not counted`,
          );
        }
        if (r.panes.length > 0) {
          throw new Error(`seedKeyGroups: seeding ${bundles[i]?.key ?? '?'} fired a pane`);
        }
      });
    }
  });
  if (specs.length > 0) await windows.tracker.observe(maxEventMs, maxReceivedMs);
  const seedMs = Date.now() - seedStarted;

  // Read back through the store's ordinary transactions, one per bucket.
  const verifyStarted = Date.now();
  let keyWindows = 0;
  for (const bucket of buckets.values()) {
    for (const window of bucket.windows) {
      const expected = [...bucket.byKey];
      await windows.store.transact('verify seeded key group', async (tx) => {
        if (tx.groupKeys === undefined) throw new Error('seedKeyGroups: not a key-groups store');
        const addresses = expected.map(([key]) => ({ key, window }));
        const read = await tx.read({
          windows: addresses,
          shards: addresses.map((a) => ({ ...a, shard: bucket.shard })),
          seen: expected.flatMap(([key, elements]) =>
            elements.map((e) => ({ key, window, shard: bucket.shard, eventId: e.eventId })),
          ),
        });
        expected.forEach(([key, elements], i) => {
          const stored = read.windows[i];
          const shard = read.shards[i];
          const where = `${key} in ${windowId(window)}`;
          if (stored === null || stored === undefined)
            throw new Error(`seed check: ${where} is missing`);
          if (stored.pane.phase !== 'EARLY' || stored.pane.panesEmitted !== 0) {
            throw new Error(
              `seed check: ${where} is ${stored.pane.phase} after ${stored.pane.panesEmitted} panes`,
            );
          }
          const count = shard?.contribution.accumulator.count;
          if (count !== elements.length || shard?.contribution.elementsInPane !== elements.length) {
            throw new Error(
              `seed check: ${where} counts ${String(count)}, seeded ${elements.length}`,
            );
          }
        });
        if ((read.seen ?? []).some((s) => !s)) {
          throw new Error(
            `seed check: a dedup id of group ${bucket.group} in ${windowId(window)} is missing`,
          );
        }
      });
      keyWindows += expected.length;
    }
  }
  return {
    keyWindows,
    events: specs.length,
    buckets: buckets.size,
    seedMs,
    verifyMs: Date.now() - verifyStarted,
  };
}
