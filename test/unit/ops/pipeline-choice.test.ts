// `offvia --pipeline NAME`: the registry lookup, the refusals of commands that do not apply to a pipeline, and the
// tables a command reads resolved from the pipeline's definition (BigQuery stubbed; no stack).
import assert from 'node:assert/strict';
import type { BigQuery } from '@google-cloud/bigquery';
import { main } from '../../../shared/ops/cli';
import type { OpsContext } from '../../../shared/ops/context';
import { EXIT, UsageError } from '../../../shared/ops/errors';
import {
  choosePipeline,
  pipelineStages,
  unavailableReason,
} from '../../../shared/ops/pipeline-choice';
import { PIPELINES } from '../../../shared/pipelines';

/** A context whose BigQuery records each query and answers `answer(sql)`; Firestore is not reachable. */
function stubContext(answer: (sql: string) => Record<string, unknown>[]): {
  ctx: OpsContext;
  queries: string[];
} {
  const queries: string[] = [];
  const bigquery = {
    query: (options: { query: string }) => {
      queries.push(options.query);
      return Promise.resolve([answer(options.query), undefined, {}]);
    },
  } as unknown as BigQuery;
  const ctx = {
    mode: 'local',
    projectId: 'p1',
    env: {},
    ingest: {
      quarantineTable: { datasetId: 'offvia_quarantine', tableId: 'poisoned_events' },
    },
    bigquery,
    firestore: () => {
      throw new Error('Firestore is not reachable in this test');
    },
    logsDir: undefined,
    describe: { bigquery: 'BigQuery', firestore: 'Firestore', hint: 'test' },
    close: () => Promise.resolve(),
  } as unknown as OpsContext;
  return { ctx, queries };
}

/** Runs offvia in-process; `connect` fails the test unless a context is given. */
async function run(argv: string[], ctx?: OpsContext) {
  const out: string[] = [];
  const err: string[] = [];
  let connected = false;
  const code = await main(argv, {
    io: { out: (t) => out.push(t), err: (t) => err.push(t) },
    now: () => Date.UTC(2026, 11, 1, 12),
    connect: (flags) => {
      connected = true;
      if (!ctx) throw new Error('connect must not be called');
      return { ...ctx, pipeline: flags.pipeline } as OpsContext;
    },
  });
  return { code, out: out.join('\n'), err: err.join(''), connected };
}

const oneLine = (text: string) => text.trim().split('\n').length === 1;

describe('offvia --pipeline: choosing a registered pipeline', () => {
  it('defaults to booking and finds every registered pipeline by name', () => {
    assert.equal(choosePipeline(undefined).name, 'booking');
    for (const p of PIPELINES) assert.equal(choosePipeline(p.name), p);
  });

  it('an unknown name is a usage error naming the registered pipelines', () => {
    assert.throws(
      () => choosePipeline('bookings'),
      (err: unknown) =>
        err instanceof UsageError &&
        err.message === '--pipeline "bookings": no such pipeline (registered: booking, telemetry)',
    );
  });

  it('offvia --pipeline nope status: one line, exit 2, before connecting', async () => {
    for (const argv of [
      ['--pipeline', 'nope', 'status'],
      ['status', '--pipeline', 'nope'],
    ]) {
      const r = await run(argv);
      assert.equal(r.code, EXIT.usage, argv.join(' '));
      assert.ok(oneLine(r.err), r.err);
      assert.match(
        r.err,
        /^offvia: --pipeline "nope": no such pipeline \(registered: booking, telemetry\)/,
      );
      assert.equal(r.connected, false);
    }
  });

  it('refuses two different --pipeline values in one line, exit 2, before connecting', async () => {
    // Taking the last silently would run e.g. booking's quarantine reprocess for an operator who named telemetry.
    for (const argv of [
      ['--pipeline', 'telemetry', 'status', '--pipeline', 'booking'],
      ['--pipeline', 'booking', '--pipeline', 'telemetry', 'status'],
    ]) {
      const r = await run(argv);
      assert.equal(r.code, EXIT.usage, argv.join(' '));
      assert.ok(oneLine(r.err), r.err);
      assert.match(
        r.err,
        /^offvia: --pipeline given twice \("(telemetry|booking)" and "(booking|telemetry)"\)/,
      );
      assert.equal(r.connected, false);
    }
    // The same name twice is the same choice.
    const same = await run(['--pipeline', 'nope', 'status', '--pipeline', 'nope']);
    assert.match(same.err, /no such pipeline/);
  });

  it("every pipeline's operator columns name its own views and tables, and every aggregation's key", () => {
    const same = (a: { datasetId: string; tableId: string }) => (b: typeof a) =>
      a.datasetId === b.datasetId && a.tableId === b.tableId;
    for (const p of PIPELINES) {
      const cols = p.operatorColumns;
      assert.ok(p.tables.views.some(same(cols.silver.dedupView)), `${p.name}: dedup view`);
      if (cols.openViews !== null) {
        assert.ok(p.tables.views.some(same(cols.openViews.quarantine)), `${p.name}: open view`);
        assert.ok(p.tables.views.some(same(cols.openViews.badData)), `${p.name}: open view`);
      }
      if (cols.resolutions !== null) {
        assert.ok(p.tables.operational.some(same(cols.resolutions)), `${p.name}: resolutions`);
      }
      assert.deepEqual(
        Object.keys(cols.aggregations).sort(),
        p.aggregations.map((a) => a.name).sort(),
        `${p.name}: a key for every aggregation`,
      );
    }
  });

  it('--stage is checked against the pipeline contract stages', () => {
    const telemetry = choosePipeline('telemetry');
    assert.deepEqual(pipelineStages(telemetry, ['range_validation,PARSE_JSON']), [
      'RANGE_VALIDATION',
      'PARSE_JSON',
    ]);
    assert.throws(
      () => pipelineStages(telemetry, ['BUSINESS_RULE_VALIDATION']),
      /unknown stage BUSINESS_RULE_VALIDATION for pipeline telemetry; one of PARSE_JSON, SCHEMA_VALIDATION/,
    );
    assert.throws(() => pipelineStages(telemetry, [' , ']), /--stage: no value given/);
  });
});

describe('offvia --pipeline: commands that do not apply', () => {
  it('booking runs every command', () => {
    const booking = choosePipeline('booking');
    for (const command of [
      'status',
      'trace',
      'quarantine reprocess',
      'bad-data redrive',
      'replay',
      'gold restate',
      'snapshot create',
      'seek',
    ]) {
      assert.equal(unavailableReason(booking, command), null, command);
    }
  });

  it('gold restate runs for every pipeline: an aggregation it cannot restate is refused by the command itself', () => {
    for (const name of ['booking', 'telemetry']) {
      assert.equal(unavailableReason(choosePipeline(name), 'gold restate'), null, name);
    }
  });

  it('replay runs for every pipeline with Bronze and names the missing table otherwise', () => {
    const telemetry = choosePipeline('telemetry');
    assert.equal(unavailableReason(telemetry, 'replay'), null);
    const noBronze = { ...telemetry, tables: { ...telemetry.tables, bronze: null } };
    assert.match(
      unavailableReason(noBronze, 'replay') ?? '',
      /^it replays Bronze, and telemetry declares no Bronze table \(tables\.bronze\)$/,
    );
  });

  it('quarantine reprocess and bad-data redrive need open views and a resolutions table, named when missing', () => {
    const telemetry = choosePipeline('telemetry');
    assert.equal(unavailableReason(telemetry, 'quarantine reprocess'), null);
    assert.equal(unavailableReason(telemetry, 'bad-data redrive'), null);
    const bare = {
      ...telemetry,
      operatorColumns: { ...telemetry.operatorColumns, openViews: null, resolutions: null },
    };
    for (const command of ['quarantine reprocess', 'bad-data redrive']) {
      assert.equal(
        unavailableReason(bare, command),
        'it selects open rows and records their resolutions, and telemetry declares none (operatorColumns.openViews, operatorColumns.resolutions)',
      );
    }
  });

  it('the commands that run for telemetry are not refused', () => {
    const telemetry = choosePipeline('telemetry');
    for (const command of [
      'status',
      'trace',
      'quarantine list',
      'quarantine reprocess',
      'bad-data redrive',
      'query',
      'dashboard',
      'snapshot create',
      'snapshot list',
      'snapshot delete',
      'seek',
      'replay',
      'gold restate',
    ]) {
      assert.equal(unavailableReason(telemetry, command), null, command);
    }
  });
});

describe('offvia --pipeline telemetry: tables from the definition', () => {
  it('quarantine list reads the dead-letter table with its own columns, newest first', async () => {
    const { ctx, queries } = stubContext(() => [
      {
        source_message_id: 'm-2',
        stage: 'RANGE_VALIDATION',
        reason: 'temperature 400 °C outside −55..125',
        rejected_at: '2026-12-01T11:59:00.000Z',
        device_id: 'd-7',
        contract_version: '2',
        payload: '{"temperatureC":400}',
      },
    ]);
    const r = await run(
      [
        '--pipeline',
        'telemetry',
        'quarantine',
        'list',
        '--stage',
        'RANGE_VALIDATION',
        '--since',
        '1h',
      ],
      ctx,
    );
    assert.equal(r.code, EXIT.ok, r.err);
    assert.equal(queries.length, 1);
    const sql = queries[0] ?? '';
    assert.match(sql, /FROM `p1\.offvia_telemetry_quarantine\.dead_letter`/);
    assert.match(sql, /stage IN UNNEST\(@stages\)/);
    assert.match(sql, /parse_time >= TIMESTAMP_MILLIS\(@since_ms\)/);
    assert.match(sql, /ORDER BY parse_time DESC/);
    assert.match(r.out, /d-7/);
    assert.match(r.out, /1 row\(s\) of p1\.offvia_telemetry_quarantine\.dead_letter, newest first/);
  });

  it('booking quarantine list reads the configured quarantine table with its columns', async () => {
    const { ctx, queries } = stubContext(() => []);
    const r = await run(['quarantine', 'list', '--json'], ctx);
    assert.equal(r.code, EXIT.ok, r.err);
    assert.match(queries[0] ?? '', /error_stage AS stage, error_reason AS reason/);
    assert.match(queries[0] ?? '', /FROM `p1\.offvia_quarantine\.poisoned_events`/);
    assert.deepEqual(JSON.parse(r.out), {
      pipeline: 'booking',
      table: 'p1.offvia_quarantine.poisoned_events',
      rows: [],
    });
  });

  it('status queries only the telemetry tables (and fails in one line when Firestore is down)', async () => {
    const { ctx, queries } = stubContext((sql) => (/GROUP BY/.test(sql) ? [] : [{ n: 4 }]));
    const r = await run(['--pipeline', 'telemetry', 'status'], ctx);
    assert.equal(r.code, EXIT.failure);
    assert.ok(oneLine(r.err), r.err);
    assert.match(r.err, /Firestore is not reachable/);
    assert.ok(queries.length >= 7, `${queries.length} queries`);
    for (const sql of queries) {
      assert.match(sql, /`p1\.offvia_telemetry_/, sql);
      assert.doesNotMatch(sql, /offvia_silver|offvia_quarantine\.|offvia_gold\./, sql);
    }
    for (const table of [
      'offvia_telemetry_bronze.raw_readings',
      'offvia_telemetry_silver.readings`',
      'offvia_telemetry_silver.readings_dedup',
      'offvia_telemetry_quarantine.dead_letter',
      'offvia_telemetry_quarantine.bad_data',
    ]) {
      assert.ok(
        queries.some((q) => q.includes(table)),
        `no query reads ${table}`,
      );
    }
  });
});
