// offvia's flag parsing, fixes, bad-data plans and SQL selection: pure functions, no backend.
import assert from 'node:assert/strict';
import { choosePipeline, pipelineStages } from '../../../shared/ops/pipeline-choice';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isLosslessNumber } from 'lossless-json';
import { parseStackEnv, targetEnv } from '../../../shared/ops/context';
import { UsageError } from '../../../shared/ops/errors';
import {
  applyEdits,
  applyFix,
  loadFix,
  parseEdits,
  parseJson,
  payloadBytes,
  stringifyJson,
} from '../../../shared/ops/fix';
import { planOf } from '../../../shared/ops/redrive';
import { changedFields } from '../../../shared/ops/reprocess';
import { LineageWriter, newRunId, pool } from '../../../shared/ops/run';
import {
  parseDuration,
  parseIdList,
  parseTimeFlag,
  selectionWhere,
} from '../../../shared/ops/selection';
import type { InsertRow, RowResult } from '../../../shared/sinks/row-writer';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

describe('offvia: selection flags', () => {
  it('parses durations and refuses anything else with a usage error naming the flag', () => {
    assert.equal(parseDuration('90s', '--since'), 90_000);
    assert.equal(parseDuration('1h', '--since'), 3_600_000);
    assert.equal(parseDuration('7d', '--since'), 7 * 86_400_000);
    for (const bad of ['', '1', 'h', '1.5h', '-1h', '5x', '1h30m']) {
      assert.throws(
        () => parseDuration(bad, '--since'),
        (e: unknown) => e instanceof UsageError && /--since/.test(e.message),
        bad,
      );
    }
  });

  it('reads a time flag as a duration ago or an RFC 3339 time with an offset', () => {
    assert.equal(parseTimeFlag('30m', '--since', NOW), NOW - 1_800_000);
    assert.equal(parseTimeFlag('2026-12-01T10:00:00Z', '--since', NOW), Date.UTC(2026, 11, 1, 10));
    assert.equal(
      parseTimeFlag('2026-12-01T11:00:00+01:00', '--until', NOW),
      Date.UTC(2026, 11, 1, 10),
    );
    assert.throws(
      () => parseTimeFlag('2026-12-01T10:00:00', '--since', NOW),
      UsageError,
      'no offset',
    );
    assert.throws(() => parseTimeFlag('yesterday', '--since', NOW), UsageError);
  });

  it('splits ids and stages; an unknown stage is a usage error', () => {
    assert.deepEqual(parseIdList(['a,b', ' c ,', 'a']), ['a', 'b', 'c']);
    const booking = choosePipeline('booking');
    assert.deepEqual(pipelineStages(booking, ['parse_json', 'BUSINESS_RULE_VALIDATION']), [
      'PARSE_JSON',
      'BUSINESS_RULE_VALIDATION',
    ]);
    assert.throws(() => pipelineStages(booking, ['PARSE']), /unknown stage PARSE/);
  });

  it('puts every value in a query parameter, never in the SQL text', () => {
    const evil = "x') OR TRUE --";
    const { where, params } = selectionWhere(
      { limit: 10, stages: ['PARSE_JSON'], pattern: evil, sinceMs: 1, untilMs: 2, ids: [evil] },
      {
        time: 'received_timestamp',
        text: 'error_reason',
        ids: ['source_message_id', 'message_key'],
        stage: 'error_stage',
      },
    );
    assert.ok(!where.includes(evil));
    assert.equal(params.pattern, evil);
    assert.deepEqual(params.ids, [evil]);
    assert.match(where, /source_message_id IN UNNEST\(@ids\) OR message_key IN UNNEST\(@ids\)/);
    assert.equal(selectionWhere({ limit: 1 }, { time: 't', text: 'x', ids: ['i'] }).where, 'TRUE');
  });
});

describe('offvia: fixes', () => {
  it('applies rename, set, upper and drop to a copy, leaving the input alone', () => {
    const input = { origin: 'jfk', destination: 'lhr', fare: '1', old: 1, junk: true };
    const edits = parseEdits({
      upper: ['origin', 'destination'],
      rename: ['old=new'],
      set: ['currency=EUR', 'n=5'],
      drop: ['junk'],
    });
    const out = applyEdits(input, edits);
    assert.deepEqual(out, {
      kind: 'fixed',
      payload: { origin: 'JFK', destination: 'LHR', fare: '1', new: 1, currency: 'EUR', n: 5 },
    });
    assert.equal(input.origin, 'jfk');
  });

  it('refuses malformed edit flags with a usage error', () => {
    assert.throws(() => parseEdits({ set: ['novalue'] }), /--set: expected FIELD=VALUE/);
    assert.throws(() => parseEdits({ rename: ['=x'] }), UsageError);
    assert.throws(() => parseEdits({ upper: [''] }), UsageError);
  });

  it('renames and drops the illegal column names bad data holds, spaces included', () => {
    const edits = parseEdits({ rename: ['bad col=bad_col'], drop: ['loyalty tier'] });
    assert.deepEqual(applyEdits({ 'bad col': 1, 'loyalty tier': 'gold', a: 2 }, edits), {
      kind: 'fixed',
      payload: { bad_col: 1, a: 2 },
    });
  });

  it('keeps every digit of numbers through parse, edit and stringify', () => {
    const text = '{"fare":123456789012345678.123456789,"n":7}';
    const parsed = parseJson(text) as Record<string, unknown>;
    assert.ok(isLosslessNumber(parsed.fare));
    const fixed = applyEdits(parsed, parseEdits({ set: ['x=1'] }));
    assert.equal(fixed.kind, 'fixed');
    assert.equal(
      payloadBytes(fixed.kind === 'fixed' ? fixed.payload : null).toString(),
      '{"fare":123456789012345678.123456789,"n":7,"x":1}',
    );
  });

  it('skips a non-object payload for field edits, and runs a fix module (null leaves the row)', async () => {
    assert.equal(applyEdits('not json', parseEdits({ upper: ['a'] })).kind, 'skipped');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'offvia-fix-'));
    const file = path.join(dir, 'fix.cjs');
    writeFileSync(
      file,
      "module.exports = (p) => typeof p === 'string' ? (p.endsWith('}') ? null : p + '\"}') : { ...p, fixed: true };",
    );
    const fix = await loadFix({ fixModule: file }, dir);
    assert.match(fix.description, /module fix\.cjs/);
    const input = { messageId: '1', where: 'PARSE_JSON', reason: 'x' };
    assert.deepEqual(await applyFix({ a: 1 }, fix, input), {
      kind: 'fixed',
      payload: { a: 1, fixed: true },
    });
    assert.deepEqual(await applyFix('{"a":"b', fix, input), {
      kind: 'fixed',
      payload: '{"a":"b"}',
    });
    assert.deepEqual(await applyFix('{}', fix, input), {
      kind: 'skipped',
      reason: 'fix module returned null',
    });
    await assert.rejects(
      loadFix({ fixModule: 'nope.js' }, dir),
      /--fix-module: cannot load nope\.js/,
    );
  });

  it('a fix module returning what cannot be sent fails that row only (skipped, it stays open)', async () => {
    const input = { messageId: '1', where: 'PARSE_JSON', reason: 'x' };
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    for (const [returned, reason] of [
      [circular, /fix module returned a value that is not JSON/],
      [() => 1, /fix module returned a function/],
      [Symbol('s'), /fix module returned a symbol/],
    ] as const) {
      const fix = { edits: [], module: () => returned, description: 'module m' };
      const result = await applyFix({ a: 1 }, fix, input);
      assert.equal(result.kind, 'skipped');
      assert.match(result.kind === 'skipped' ? result.reason : '', reason);
    }
  });

  it('describes what a fix changed, field by field', () => {
    assert.equal(
      changedFields('{"a":"x","b":1}', '{"a":"X","b":1,"c":2}'),
      'a: "x" → "X", c: (absent) → 2',
    );
    assert.equal(changedFields('{"a":1}', '{"a":1}'), 'unchanged');
    assert.equal(stringifyJson({ a: 1 }), '{"a":1}');
  });
});

describe('offvia: bad-data plans', () => {
  const base = { rowKey: 'k', messageId: 'm', insertId: 'i', error: 'e' };
  it("merges the drift gate's row and extra fields for a table target", () => {
    const plan = planOf({
      ...base,
      targetDest: 'my-project.offvia_silver.fact_bookings',
      badData: '{"row":{"booking_id":"B","fare_amount":"1.5"},"extra_fields":{"x-y":2}}',
    });
    assert.deepEqual(plan, {
      kind: 'row',
      table: { projectId: 'my-project', datasetId: 'offvia_silver', tableId: 'fact_bookings' },
      row: { booking_id: 'B', fare_amount: '1.5', 'x-y': 2 },
    });
  });
  it('re-ingests a message parked by the retry-age guard (target_dest is a step, not a table)', () => {
    const plan = planOf({
      ...base,
      targetDest: 'window state (Firestore): event not counted',
      badData:
        '{"raw_payload":"{}","raw_payload_base64":null,"attributes":{"a":"1"},"publish_time":null}',
    });
    assert.equal(plan.kind, 'message');
    assert.equal(plan.kind === 'message' && plan.body.toString(), '{}');
    assert.deepEqual(plan.kind === 'message' && plan.attributes, { a: '1' });
  });
  it('reports rows it cannot read instead of guessing', () => {
    assert.equal(planOf({ ...base, targetDest: 'd.t', badData: 'nope' }).kind, 'unreadable');
    assert.equal(planOf({ ...base, targetDest: 'a step', badData: '{"x":1}' }).kind, 'unreadable');
  });
});

describe('offvia: run machinery', () => {
  it('adds the lineage column to Silver and quarantine rows only', async () => {
    const seen: { table: string; rows: InsertRow[] }[] = [];
    const inner = {
      insertRows: (
        table: { datasetId: string; tableId: string },
        rows: readonly InsertRow[],
      ): Promise<RowResult[]> => {
        seen.push({ table: `${table.datasetId}.${table.tableId}`, rows: [...rows] });
        return Promise.resolve(rows.map(() => ({ ok: true as const })));
      },
    };
    const w = new LineageWriter(inner, 'run-1', [{ datasetId: 's', tableId: 'f' }]);
    await w.insertRows({ datasetId: 's', tableId: 'f' }, [{ insertId: 'a', json: { x: 1 } }]);
    await w.insertRows({ datasetId: 'g', tableId: 'p' }, [{ insertId: 'b', json: { y: 1 } }]);
    assert.deepEqual(seen[0]?.rows[0]?.json, { x: 1, reprocess_run_id: 'run-1' });
    assert.deepEqual(seen[1]?.rows[0]?.json, { y: 1 });
  });

  it('names runs by action and UTC start time', () => {
    assert.match(newRunId('reprocess', NOW), /^offvia-reprocess-20261201T120000-[0-9a-f]{6}$/);
  });

  it('never has more than `concurrency` items in flight and visits each once', async () => {
    let inFlight = 0;
    let most = 0;
    const visited: number[] = [];
    let done = 0;
    await pool(
      Array.from({ length: 50 }, (_, i) => i),
      4,
      async (i) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, (i * 7) % 5));
        visited.push(i);
        inFlight--;
      },
      () => done++,
    );
    assert.equal(most, 4);
    assert.equal(done, 50);
    assert.deepEqual(
      [...visited].sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i),
    );
  });
});

describe('offvia: target', () => {
  it("reads the stack's env file, quotes removed", () => {
    assert.deepEqual(parseStackEnv('export A=1\nexport B="x y"\n# c\nC=\'z\'\nnot a line\n'), {
      A: '1',
      B: 'x y',
      C: 'z',
    });
  });
  it('--project drops the emulator variables; without a stack or --project it is a usage error', () => {
    const env = {
      BIGQUERY_EMULATOR_HOST: 'h',
      FIRESTORE_EMULATOR_HOST: 'f',
      PUBSUB_EMULATOR_HOST: 'p',
    };
    const cloud = targetEnv({ project: 'my-proj', stackDir: '/nonexistent' }, env);
    assert.equal(cloud.mode, 'cloud');
    assert.equal(cloud.env.BIGQUERY_EMULATOR_HOST, undefined);
    assert.equal(cloud.env.OFFVIA_PROJECT_ID, 'my-proj');
    assert.throws(
      () => targetEnv({ stackDir: '/nonexistent' }, {}),
      /no local stack .* and no --project/,
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'offvia-stack-'));
    writeFileSync(
      path.join(dir, 'env'),
      'export BIGQUERY_EMULATOR_HOST=http://127.0.0.1:1/bigquery/v2\nexport OFFVIA_PROJECT_ID=offvia-local\n',
    );
    const local = targetEnv({ stackDir: dir }, {});
    assert.equal(local.mode, 'local');
    assert.equal(local.env.OFFVIA_PROJECT_ID, 'offvia-local');
  });
});
