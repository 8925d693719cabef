// WatermarkTracker's shared reads: concurrent callers share one document read, and a fresh caller never gets a read
// that started before its call (it must see every commit that finished before it asked). Its spaced writes: an event
// seen inside the write interval stays with the instance until its next observation. The stores are stubs.
import assert from 'node:assert/strict';
import { WatermarkTracker } from '../../../shared/state/watermark-tracker';
import type { StoredWatermark } from '../../../shared/state/window-store';

const POLICY = { maxOutOfOrdernessMs: 10_000, idleTimeoutMs: 60_000, maxFutureSkewMs: 300_000 };

/** A store whose reads stay open until `release` is called; each read returns the record current at its start. */
function slowStore() {
  let watermarkMs = 1_000;
  const pending: (() => void)[] = [];
  const starts: number[] = [];
  const store = {
    readWatermark: (): Promise<StoredWatermark | null> => {
      const seen = watermarkMs;
      starts.push(seen);
      return new Promise((resolve) => {
        pending.push(() =>
          resolve({
            state: { watermarkMs: seen, maxEventTimeMs: seen + 10_000, maxEventTimeSeenAtMs: 0 },
            updatedAtMs: 0,
            version: `v${seen}`,
          }),
        );
      });
    },
    writeWatermark: () => Promise.resolve(null),
  };
  return {
    store,
    starts,
    commit: (ms: number) => (watermarkMs = ms),
    releaseAll: async () => {
      while (pending.length > 0) {
        pending.shift()?.();
        await new Promise((r) => setImmediate(r));
      }
    },
  };
}

describe('WatermarkTracker reads', () => {
  it('serves concurrent cached-read callers with one document read', async () => {
    const s = slowStore();
    const tracker = new WatermarkTracker(s.store, {
      policy: POLICY,
      cacheMs: 1000,
      minWriteIntervalMs: 1000,
    });
    const calls = Array.from({ length: 20 }, () => tracker.watermarkMs(5_000, false));
    await s.releaseAll();
    assert.deepEqual(await Promise.all(calls), Array(20).fill(1_000));
    assert.equal(s.starts.length, 1);
  });

  it('gives a fresh caller a read started after its call, shared with other fresh callers', async () => {
    const s = slowStore();
    const tracker = new WatermarkTracker(s.store, {
      policy: POLICY,
      cacheMs: 0,
      minWriteIntervalMs: 1000,
    });
    const early = tracker.watermarkMs(5_000, true);
    // A commit lands while the first read is in flight; callers asking now must see it.
    s.commit(2_000);
    const late = [tracker.watermarkMs(5_001, true), tracker.watermarkMs(5_002, true)];
    await s.releaseAll();
    assert.equal(await early, 1_000);
    assert.deepEqual(await Promise.all(late), [2_000, 2_000]);
    assert.equal(s.starts.length, 2);
  });
});

/** A store holding the record in memory, with compare-and-set writes. */
function memoryStore() {
  let record: StoredWatermark | null = null;
  let version = 0;
  return {
    readWatermark: (): Promise<StoredWatermark | null> => Promise.resolve(record),
    writeWatermark: (
      state: StoredWatermark['state'],
      updatedAtMs: number,
      expected: StoredWatermark | null,
    ): Promise<StoredWatermark | null> => {
      if (expected?.version !== record?.version) return Promise.resolve(null);
      record = { state, updatedAtMs, version: `v${++version}` };
      return Promise.resolve(record);
    },
  };
}

describe('WatermarkTracker spaced writes', () => {
  // What test/e2e/windows.test.ts allows for: there, a booking recorded less than the interval after the previous
  // write did not move the stored watermark, and fireWindows (another instance) found nothing due.
  it('keeps an event seen inside the interval pending until the next observation after it', async () => {
    const store = memoryStore();
    const tracker = new WatermarkTracker(store, {
      policy: POLICY,
      cacheMs: 0,
      minWriteIntervalMs: 1000,
    });
    const t0 = 1_800_000_000_000;
    assert.equal((await tracker.observe(t0 - 180_000, t0)).written, true);
    // 900 ms later: a booking of now, not written; the stored watermark still trails the earlier booking.
    assert.equal((await tracker.observe(t0 + 900, t0 + 900)).written, false);
    assert.equal((await store.readWatermark())?.state.watermarkMs, t0 - 190_000);
    // The instance's next observation after the interval writes the maximum it kept, even an older event's.
    const next = await tracker.observe(t0 - 170_000, t0 + 1_000);
    assert.equal(next.written, true);
    assert.equal((await store.readWatermark())?.state.watermarkMs, t0 + 900 - 10_000);
  });
});

describe('WatermarkTracker advance under a watermark hold', () => {
  it('stops the idle rule at the hold, never goes back, and moves on once the hold is gone', async () => {
    const store = memoryStore();
    const tracker = new WatermarkTracker(store, {
      policy: POLICY,
      cacheMs: 0,
      minWriteIntervalMs: 0,
    });
    const t0 = 1_800_000_000_000;
    await tracker.observe(t0, t0);
    // Five minutes without events while a message published at t0 + 2 s keeps failing.
    const held = await tracker.advance(t0 + 300_000, t0 + 2_000 - 10_000);
    assert.equal(held.state.watermarkMs, t0 - 8_000);
    // A hold older than the stored watermark leaves it where it is.
    const older = await tracker.advance(t0 + 310_000, t0 - 60_000);
    assert.equal(older.state.watermarkMs, t0 - 8_000);
    assert.equal(older.written, false);
    // Released: the idle rule applies again.
    const free = await tracker.advance(t0 + 320_000, null);
    assert.equal(free.state.watermarkMs, t0 + 320_000 - 60_000 - 10_000);
  });
});
