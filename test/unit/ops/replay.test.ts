// offvia replay's pure parts: flags, publish-time chunks, the checkpoints' "what is left", the rate limit, the
// known-rows writer, and the CLI's one-line answers to bad flags (before anything connects).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { TableRef } from '../../../shared/config/env';
import { main } from '../../../shared/ops/cli';
import { EXIT, OpsError, UsageError } from '../../../shared/ops/errors';
import { attributesOf, readChunk } from '../../../shared/ops/replay-bronze';
import type { OpsContext } from '../../../shared/ops/context';
import { KnownRowsWriter, emptyKnownRows } from '../../../shared/ops/known-rows-writer';
import {
  bronzeGap,
  chunksToRun,
  cutChunks,
  matchesFilters,
  MAX_CHUNKS,
  parseAttributeFilter,
  parseReplayFlags,
  parseRfc3339,
  RateLimiter,
  totalsOf,
  type ChunkCheckpoint,
  type ReplayFlags,
} from '../../../shared/ops/replay-plan';
import type { ReplayCheckpointStore, ReplayRunRecord } from '../../../shared/ops/replay-store';
import {
  PartialInsertError,
  type InsertRow,
  type RowResult,
  type RowWriter,
} from '../../../shared/sinks/row-writer';

/** An in-memory checkpoint store with the Firestore store's contract (a run id once, a checkpoint per chunk). */
class MemoryReplayStore implements ReplayCheckpointStore {
  readonly runs = new Map<string, ReplayRunRecord>();
  readonly checkpoints = new Map<string, Map<number, ChunkCheckpoint>>();

  createRun(run: ReplayRunRecord): Promise<void> {
    if (this.runs.has(run.runId)) return Promise.reject(new Error(`run ${run.runId} exists`));
    this.runs.set(run.runId, run);
    return Promise.resolve();
  }

  readRun(runId: string): Promise<ReplayRunRecord | null> {
    return Promise.resolve(this.runs.get(runId) ?? null);
  }

  setRunStatus(runId: string, status: ReplayRunRecord['status'], atMs: number): Promise<void> {
    const run = this.runs.get(runId);
    if (run === undefined) return Promise.reject(new Error(`no run ${runId}`));
    this.runs.set(runId, { ...run, status, updatedAtMs: atMs });
    return Promise.resolve();
  }

  readCheckpoints(runId: string): Promise<ChunkCheckpoint[]> {
    const map = this.checkpoints.get(runId) ?? new Map<number, ChunkCheckpoint>();
    return Promise.resolve([...map.values()].sort((a, b) => a.index - b.index));
  }

  writeCheckpoint(runId: string, checkpoint: ChunkCheckpoint): Promise<void> {
    const map = this.checkpoints.get(runId) ?? new Map<number, ChunkCheckpoint>();
    map.set(checkpoint.index, checkpoint);
    this.checkpoints.set(runId, map);
    return Promise.resolve();
  }
}

const isUsage = (pattern: RegExp) => (e: unknown) =>
  e instanceof UsageError && pattern.test(e.message);

const flags = (over: Partial<ReplayFlags> = {}): ReplayFlags => ({
  from: '2026-12-01T10:00:00Z',
  to: '2026-12-01T11:00:00Z',
  chunkMinutes: '60',
  concurrency: '8',
  ...over,
});

describe('offvia replay: flags', () => {
  it('reads RFC 3339 times with an offset as epoch ms UTC', () => {
    assert.equal(parseRfc3339('2026-12-01T10:00:00Z', '--from'), Date.UTC(2026, 11, 1, 10));
    assert.equal(parseRfc3339('2026-12-01T11:00:00+01:00', '--from'), Date.UTC(2026, 11, 1, 10));
    assert.equal(
      parseRfc3339('2026-12-01T10:00:00.250Z', '--to'),
      Date.UTC(2026, 11, 1, 10, 0, 0, 250),
    );
  });

  it('refuses times that are not RFC 3339 with seconds and an offset, or not on the calendar', () => {
    for (const bad of [
      '',
      '2026-12-01',
      '2026-12-01T10:00Z',
      '2026-12-01T10:00:00',
      '2026-02-30T10:00:00Z',
      '2026-12-01T24:00:00Z',
      '2026-12-01 10:00:00Z',
      'yesterday',
      '1h',
      '0000-01-01T00:00:00Z',
    ]) {
      assert.throws(
        () => parseRfc3339(bad, '--from'),
        isUsage(/^--from: expected an RFC 3339/),
        bad,
      );
    }
  });

  it('--message-ids split on blanks as on commas: "1843 1844" is two ids, not one that matches nothing', () => {
    const o = parseReplayFlags(flags({ messageIds: ['1843 1844', '1845\t1846,1847'] }), 'ops');
    assert.deepEqual(o.messageIds, ['1843', '1844', '1845', '1846', '1847']);
  });

  it('parses a whole command line into options', () => {
    const o = parseReplayFlags(
      flags({
        filter: ['attr.source=web', 'attr.k=a=b'],
        messageIds: ['1,2', ' 3 ,', '2'],
        rate: '0.5',
        chunkMinutes: '15',
        dryRun: true,
      }),
      'ops',
    );
    assert.equal(o.fromMs, Date.UTC(2026, 11, 1, 10));
    assert.equal(o.toMs, Date.UTC(2026, 11, 1, 11));
    assert.deepEqual(o.filters, [
      { key: 'source', value: 'web' },
      { key: 'k', value: 'a=b' },
    ]);
    assert.deepEqual(o.messageIds, ['1', '2', '3']);
    assert.equal(o.ratePerSecond, 0.5);
    assert.equal(o.chunkMs, 15 * 60_000);
    assert.equal(o.dryRun, true);
    assert.equal(o.operator, 'ops');
  });

  it('refuses --to at or before --from, a missing range, and bad numbers, each naming the flag', () => {
    const cases: [Partial<ReplayFlags>, RegExp][] = [
      [{ to: '2026-12-01T10:00:00Z' }, /--to .* must be later than --from/],
      [{ to: '2026-12-01T09:00:00Z' }, /--to .* must be later than --from/],
      [{ from: undefined }, /--from and --to are required/],
      [{ to: undefined }, /--from and --to are required/],
      [{ rate: '0' }, /^--rate/],
      [{ rate: '-5' }, /^--rate/],
      [{ rate: 'fast' }, /^--rate/],
      [{ chunkMinutes: '0' }, /^--chunk-minutes/],
      [{ chunkMinutes: '1.5' }, /^--chunk-minutes/],
      [{ concurrency: '0' }, /^--concurrency/],
      [{ concurrency: '1000' }, /^--concurrency/],
      [{ filter: ['source=web'] }, /^--filter: expected attr\.KEY=VALUE/],
      [{ filter: ['attr.=x'] }, /^--filter/],
      [{ messageIds: [' , '] }, /^--message-ids: no id/],
      [{ resume: 'nope' }, /^--resume: expected a replay run id/],
      [
        {
          resume: 'offvia-replay-20261201T101500-a1b2c3',
          chunkMinutes: undefined,
          filter: ['attr.a=b'],
        },
        /omit --filter/,
      ],
      [
        { from: undefined, to: undefined, resume: 'offvia-replay-20261201T101500-a1b2c3' },
        /--resume continues a run with its own chunks: omit --chunk-minutes/,
      ],
      [
        { from: '2000-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z', chunkMinutes: '1' },
        /more than 100000/,
      ],
    ];
    for (const [over, pattern] of cases) {
      assert.throws(
        () => parseReplayFlags(flags(over), 'ops'),
        isUsage(pattern),
        JSON.stringify(over),
      );
    }
  });

  it('--resume needs no range, and takes the run id', () => {
    const o = parseReplayFlags(
      flags({
        from: undefined,
        to: undefined,
        chunkMinutes: undefined,
        resume: 'offvia-replay-20261201T101500-a1b2c3',
      }),
      'ops',
    );
    assert.equal(o.resume, 'offvia-replay-20261201T101500-a1b2c3');
    assert.equal(o.fromMs, undefined);
  });

  it('attribute filters: all must hold, exact values, own keys only', () => {
    const attrs = { source: 'web', region: 'eu' };
    assert.ok(matchesFilters(attrs, []));
    assert.ok(matchesFilters(attrs, [parseAttributeFilter('attr.source=web')]));
    assert.ok(
      !matchesFilters(attrs, [
        parseAttributeFilter('attr.source=web'),
        parseAttributeFilter('attr.region=us'),
      ]),
    );
    assert.ok(!matchesFilters(attrs, [parseAttributeFilter('attr.source=WEB')]));
    assert.ok(!matchesFilters({}, [parseAttributeFilter('attr.toString=x')]));
    assert.ok(matchesFilters({ empty: '' }, [parseAttributeFilter('attr.empty=')]));
  });
});

describe('offvia replay: chunks and checkpoints', () => {
  it('cuts any range into contiguous, non-overlapping chunks of at most the chunk length', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4e12 }),
        fc.integer({ min: 1, max: 3e8 }),
        fc.integer({ min: 1, max: 1e8 }),
        (fromMs, length, chunkMs) => {
          fc.pre(Math.ceil(length / chunkMs) <= MAX_CHUNKS);
          const chunks = cutChunks(fromMs, fromMs + length, chunkMs);
          assert.equal(chunks[0]?.fromMs, fromMs);
          assert.equal(chunks.at(-1)?.toMs, fromMs + length);
          chunks.forEach((c, i) => {
            assert.equal(c.index, i);
            assert.ok(c.toMs > c.fromMs && c.toMs - c.fromMs <= chunkMs);
            if (i > 0) assert.equal(c.fromMs, chunks[i - 1]?.toMs);
          });
        },
      ),
    );
  });

  it('refuses an empty or reversed range', () => {
    assert.throws(() => cutChunks(10, 10, 1), isUsage(/later than --from/));
    assert.throws(() => cutChunks(10, 5, 1), isUsage(/later than --from/));
  });

  const checkpoint = (
    index: number,
    status: 'done' | 'failed',
    attempt = 1,
    over: Partial<ChunkCheckpoint> = {},
  ): ChunkCheckpoint => ({
    index,
    fromMs: index * 10,
    toMs: index * 10 + 10,
    status,
    rows: 10,
    outcomes: { silver: 7, quarantine: 3 },
    alreadyPresent: { quarantine: 3 },
    failures: status === 'failed' ? [{ messageId: `m${index}`, error: 'timeout' }] : [],
    failedCount: status === 'failed' ? 1 : 0,
    attempt,
    finishedAtMs: 0,
    elapsedMs: 1,
    ...over,
  });

  it('a resume runs the chunks without a done checkpoint: failed ones and those a kill left unfinished', () => {
    const chunks = cutChunks(0, 50, 10);
    const todo = chunksToRun(chunks, [
      checkpoint(0, 'done'),
      checkpoint(1, 'failed'),
      checkpoint(3, 'done'),
    ]);
    assert.deepEqual(
      todo.map((c) => c.index),
      [1, 2, 4],
    );
    assert.deepEqual(
      chunksToRun(
        chunks,
        chunks.map((c) => checkpoint(c.index, 'done')),
      ),
      [],
    );
  });

  it('totals count each chunk once: a resumed chunk replaces its earlier checkpoint', () => {
    const t = totalsOf([
      checkpoint(0, 'done'),
      checkpoint(1, 'failed', 1),
      checkpoint(1, 'done', 2, { outcomes: { silver: 10 }, alreadyPresent: {} }),
    ]);
    assert.equal(t.rows, 20);
    assert.deepEqual(t.outcomes, { silver: 17, quarantine: 3, schema_retry: 0, bad_data: 0 });
    assert.deepEqual(t.alreadyPresent, { quarantine: 3 });
    assert.equal(t.failed, 0);
    assert.equal(t.chunksDone, 2);
    assert.equal(t.chunksFailed, 0);
    const failing = totalsOf([checkpoint(0, 'failed')]);
    assert.equal(failing.failed, 1);
    assert.deepEqual(failing.failures, [{ messageId: 'm0', error: 'timeout' }]);
  });

  it('the in-memory store keeps one checkpoint per chunk and refuses a second run with the same id', async () => {
    const store = new MemoryReplayStore();
    const run = {
      runId: 'r',
      fromMs: 0,
      toMs: 20,
      chunkMs: 10,
      filters: [],
      messageIds: null,
      operator: 'ops',
      createdAtMs: 0,
      status: 'running' as const,
      updatedAtMs: 0,
    };
    await store.createRun(run);
    await assert.rejects(store.createRun(run), /exists/);
    await store.writeCheckpoint('r', checkpoint(1, 'failed'));
    await store.writeCheckpoint('r', checkpoint(1, 'done', 2));
    await store.writeCheckpoint('r', checkpoint(0, 'done'));
    const stored = await store.readCheckpoints('r');
    assert.deepEqual(
      stored.map((c) => [c.index, c.status, c.attempt]),
      [
        [0, 'done', 1],
        [1, 'done', 2],
      ],
    );
    await store.setRunStatus('r', 'done', 5);
    assert.equal((await store.readRun('r'))?.status, 'done');
  });
});

describe('offvia replay: rate limit', () => {
  it('spaces messages 1000 / rate ms apart, without a burst', async () => {
    let now = 1_000;
    const sleeps: number[] = [];
    const limiter = new RateLimiter(
      5,
      () => now,
      (ms) => {
        sleeps.push(ms);
        now += ms;
        return Promise.resolve();
      },
    );
    const starts: number[] = [];
    for (let i = 0; i < 6; i++) {
      await limiter.take();
      starts.push(now);
    }
    assert.deepEqual(starts, [1000, 1200, 1400, 1600, 1800, 2000]);
    assert.equal(sleeps.length, 5);
  });

  it('does not wait without a rate', async () => {
    const limiter = new RateLimiter(
      undefined,
      () => 0,
      () => Promise.reject(new Error('slept')),
    );
    for (let i = 0; i < 100; i++) await limiter.take();
  });
});

describe('offvia replay: the known-rows writer', () => {
  const quarantine: TableRef = { datasetId: 'offvia_quarantine', tableId: 'poisoned_events' };
  const badData: TableRef = { datasetId: 'offvia_quarantine', tableId: 'bad_data' };
  const silver: TableRef = { datasetId: 'offvia_silver', tableId: 'fact_bookings' };
  const qRow = (id: string, stage: string): InsertRow => ({
    insertId: id,
    json: { source_message_id: id, error_stage: stage },
  });

  class Recorder implements RowWriter {
    calls: { table: string; ids: string[] }[] = [];
    fail: Error | undefined;
    insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
      this.calls.push({ table: table.tableId, ids: rows.map((r) => r.insertId) });
      if (this.fail) return Promise.reject(this.fail);
      return Promise.resolve(rows.map(() => ({ ok: true as const })));
    }
  }

  it('writes no quarantine row a message already has at that stage, and no bad-data row already there', async () => {
    const inner = new Recorder();
    const writer = new KnownRowsWriter(inner, quarantine, badData);
    const known = emptyKnownRows();
    known.quarantine.set('m1', new Set(['SCHEMA_VALIDATION']));
    known.badData.add('ev-9');
    writer.known = known;
    const results = await writer.insertRows(quarantine, [
      qRow('m1', 'SCHEMA_VALIDATION'),
      qRow('m1', 'BUSINESS_RULE_VALIDATION'),
      qRow('m2', 'SCHEMA_VALIDATION'),
    ]);
    assert.deepEqual(results, [{ ok: true }, { ok: true }, { ok: true }]);
    await writer.insertRows(badData, [
      { insertId: 'bad:ev-9', json: { insert_id: 'ev-9' } },
      { insertId: 'bad:ev-10', json: { insert_id: 'ev-10' } },
    ]);
    await writer.insertRows(silver, [{ insertId: 'm1', json: { source_message_id: 'm1' } }]);
    assert.deepEqual(inner.calls, [
      { table: 'poisoned_events', ids: ['m1', 'm2'] },
      { table: 'bad_data', ids: ['bad:ev-10'] },
      { table: 'fact_bookings', ids: ['m1'] },
    ]);
    assert.deepEqual(known.skipped, { quarantine: 1, bad_data: 1 });
  });

  it('does not call BigQuery when every row is known', async () => {
    const inner = new Recorder();
    const writer = new KnownRowsWriter(inner, quarantine, badData);
    writer.known.quarantine.set('m1', new Set(['PARSE_JSON']));
    assert.deepEqual(await writer.insertRows(quarantine, [qRow('m1', 'PARSE_JSON')]), [
      { ok: true },
    ]);
    assert.equal(inner.calls.length, 0);
  });

  it('re-throws a partial failure with one outcome per row it was given', async () => {
    const inner = new Recorder();
    inner.fail = new PartialInsertError('insertAll q', 'stopped', [
      { ok: false, kind: 'not_written', reasons: ['timeout'], error: 'timeout: t' },
    ]);
    const writer = new KnownRowsWriter(inner, quarantine, badData);
    writer.known.quarantine.set('m1', new Set(['PARSE_JSON']));
    await assert.rejects(
      writer.insertRows(quarantine, [qRow('m1', 'PARSE_JSON'), qRow('m2', 'PARSE_JSON')]),
      (e: unknown) =>
        e instanceof PartialInsertError &&
        e.outcomes.length === 2 &&
        e.outcomes[0]?.ok === true &&
        e.outcomes[1]?.ok === false &&
        e.message === 'insertAll q: stopped',
    );
  });
});

describe('offvia replay: the command line', () => {
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    let connected = false;
    const code = await main(argv, {
      io: { out: (t) => out.push(t), err: (t) => err.push(t) },
      connect: () => {
        connected = true;
        throw new Error('must not connect for a usage error');
      },
    });
    return { code, out: out.join(''), err: err.join(''), connected };
  };

  for (const [argv, pattern] of [
    [['replay', '--from', '2026-12-01T11:00:00Z', '--to', '2026-12-01T10:00:00Z'], /must be later/],
    [
      ['replay', '--from', 'yesterday', '--to', '2026-12-01T10:00:00Z'],
      /--from: expected an RFC 3339/,
    ],
    [['replay', '--from', '2026-12-01T10:00:00Z'], /--from and --to are required/],
    [
      ['replay', '--from', '2026-12-01T10:00:00Z', '--to', '2026-12-01T11:00:00Z', '--bogus'],
      /unknown option '--bogus'/,
    ],
    [
      ['replay', '--from', '2026-12-01T10:00:00Z', '--to', '2026-12-01T11:00:00Z', '--rate', 'x'],
      /--rate/,
    ],
  ] as const) {
    it(`answers ${argv.slice(1).join(' ')} with one line and exit 2, without connecting`, async () => {
      const r = await run(...argv);
      assert.equal(r.code, EXIT.usage, r.err);
      assert.equal(r.err.trim().split('\n').length, 1, r.err);
      assert.match(r.err, /^offvia: /);
      assert.match(r.err, pattern);
      assert.doesNotMatch(r.err, /\n\s+at /);
      assert.equal(r.connected, false);
      assert.equal(r.out, '');
    });
  }

  it('has --help with the flags and the runbook', async () => {
    const r = await run('replay', '--help');
    assert.equal(r.code, EXIT.ok);
    for (const flag of [
      '--from',
      '--to',
      '--filter',
      '--message-ids',
      '--dry-run',
      '--rate',
      '--chunk-minutes',
      '--resume',
    ]) {
      assert.ok(r.out.includes(flag), flag);
    }
    assert.match(r.out, /docs\/backfill\.md/);
  });
});

describe('replay: attributes read from Bronze', () => {
  it('keeps string attributes as the push decoder passes them, `__proto__` included', () => {
    const attributes = attributesOf('{"eventTs":"2026-12-01T10:00:00Z","__proto__":"x"}', 'm-1');
    assert.equal(attributes.eventTs, '2026-12-01T10:00:00Z');
    assert.deepEqual(Object.keys(attributes), ['eventTs', '__proto__']);
    assert.deepEqual(attributesOf(null, 'm-1'), {});
  });

  it('a non-string attribute value is an error naming the message and the attribute, never dropped', () => {
    assert.throws(
      () => attributesOf('{"deviceId":"d-1","eventTs":1764583200000}', 'm-7'),
      (err: unknown) =>
        err instanceof OpsError &&
        /Bronze attribute "eventTs" of message m-7 is number, not a string: 1764583200000/.test(
          err.message,
        ),
    );
    assert.throws(() => attributesOf('{"a":null}', 'm-8'), /"a" of message m-8 is null/);
    assert.throws(() => attributesOf('[1]', 'm-9'), /of message m-9 are not a JSON object/);
    assert.throws(() => attributesOf('{', 'm-10'), /of message m-10 are not JSON/);
  });
});

describe('offvia replay: does Bronze hold the range', () => {
  const from = Date.parse('2026-12-01T10:00:00Z');
  const to = Date.parse('2026-12-01T10:01:00Z');
  const day = 86_400_000;
  const base = {
    fromMs: from,
    toMs: to,
    nowMs: from + 2 * 3_600_000,
    bronzeRows: 0,
    written: 0,
    missing: 0,
    partitionExpirationMs: null,
    createdMs: null,
  };

  it('is no gap when a range is quiet everywhere, or every written message is in Bronze', () => {
    assert.equal(bronzeGap(base), null);
    assert.equal(bronzeGap({ ...base, written: 120 }), null);
    assert.equal(bronzeGap({ ...base, bronzeRows: 118, written: 120 }), null);
    // Within the partition expiration: the range is kept.
    assert.equal(bronzeGap({ ...base, partitionExpirationMs: 30 * day }), null);
  });

  it('names the messages Silver and quarantine wrote that Bronze lacks, with the range', () => {
    assert.equal(
      bronzeGap({ ...base, written: 120, missing: 117 }),
      'Bronze holds 0 row(s) from 2026-12-01T10:00:00.000Z to 2026-12-01T10:01:00.000Z, but Silver and quarantine ' +
        'hold 117 message(s) written in the range (of 120 checked) that Bronze does not hold: those messages cannot ' +
        'be replayed (docs/backfill.md#when-bronze-lacks-the-range)',
    );
    assert.match(
      bronzeGap({ ...base, written: 5, missing: 5, createdMs: from + 30_000 }) ?? '',
      /that Bronze does not hold; Bronze was created at 2026-12-01T10:00:30.000Z:/,
    );
    // A Bronze created before the range is no cause.
    assert.doesNotMatch(
      bronzeGap({ ...base, written: 5, missing: 5, createdMs: from - 1 }) ?? '',
      /created/,
    );
  });

  it('names a range older than the partition expiration, even where some rows are left', () => {
    const now = from + 31.5 * day;
    assert.equal(
      bronzeGap({ ...base, bronzeRows: 40, nowMs: now, partitionExpirationMs: 30 * day }),
      'Bronze holds 40 row(s) from 2026-12-01T10:00:00.000Z to 2026-12-01T10:01:00.000Z, but Bronze partitions ' +
        'expire after 30.0 days and the range starts 31.5 days ago: nothing published before ' +
        '2026-12-02T22:00:00.000Z is left: those messages cannot be replayed (docs/backfill.md#when-bronze-lacks-the-range)',
    );
    assert.match(
      bronzeGap({ ...base, nowMs: now, partitionExpirationMs: 30 * day, written: 3, missing: 3 }) ??
        '',
      /does not hold; and Bronze partitions expire after 30\.0 days/,
    );
  });

  it('exits 4 for a gap (docs/operations.md), apart from 1 for failed messages', () => {
    assert.equal(EXIT.bronzeGap, 4);
    assert.equal(new Set(Object.values(EXIT)).size, Object.values(EXIT).length);
  });
});

describe('replay: Bronze heartbeats', () => {
  it('skips watermark heartbeats when reading a chunk: they are never re-published as events', async () => {
    const row = (id: string, attributes: string) => ({
      message_id: id,
      publish_time: '2026-12-01T10:00:00.000Z',
      data: id === 'hb' ? 'heartbeat' : '{"booking_id":"BK-1"}',
      attributes,
    });
    const ctx = {
      mode: 'local',
      env: {},
      tables: { bronze: 'p.offvia_bronze.raw_bookings' },
      bigquery: {
        query: () =>
          Promise.resolve([
            [row('hb', '{"offvia_heartbeat":"booking"}'), row('m-1', '{}')],
            {},
            {},
          ]),
      },
      describe: { bigquery: 'BigQuery emulator', firestore: '', hint: '' },
    } as unknown as OpsContext;
    const chunk = { index: 0, fromMs: 0, toMs: Date.UTC(2027, 0, 1) };
    const read = await readChunk(ctx, chunk, { filters: [], messageIds: null });
    assert.deepEqual(
      read.map((m) => m.messageId),
      ['m-1'],
    );
  });
});
