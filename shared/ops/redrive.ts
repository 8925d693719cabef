// `offvia bad-data redrive`: fix open bad-data rows and write each to its target table with its original insertId,
// or send a message the retry-age guard parked through the ingest path again; resolved rows are recorded.
import { readTable, type TableRef } from '../config/env';
import { isPlainObject } from '../contract/json-payload';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import { query, type OpsContext } from './context';
import { applyFix, jsonOrText, parseJson, payloadBytes, stringifyJson, type Fix } from './fix';
import type { Io } from './output';
import { addSample, type ReprocessOptions, type ReprocessReport } from './reprocess';
import {
  LINEAGE_COLUMN,
  countOutcome,
  finishTiming,
  ingestFixed,
  runOverRows,
  selectOpenRows,
  sameTable,
  type Reached,
} from './run';
import { selectionWhere, type RowSelection } from './selection';

/** An open bad-data row, as `redrive` reads it from the open view. */
export interface BadDataCandidate {
  rowKey: string;
  messageId: string | null;
  insertId: string | null;
  targetDest: string;
  error: string;
  badData: string;
}

/**
 * How a bad-data row is re-driven: `row` for `table` (the drift gate's `{row, extra_fields}` merged, or the refused
 * row), or `message` (the retry-age guard's copy; its `target_dest` names the failing step, not a table).
 */
export type RedrivePlan =
  | { kind: 'row'; table: TableRef; row: Record<string, unknown> }
  | { kind: 'message'; body: Buffer; attributes: Record<string, string> }
  | { kind: 'unreadable'; reason: string };

/** Reads a bad-data row's content into what redrive writes (pure; numbers kept exact). */
export function planOf(c: BadDataCandidate): RedrivePlan {
  let parsed: unknown;
  try {
    parsed = parseJson(c.badData);
  } catch (err) {
    return {
      kind: 'unreadable',
      reason: `bad_data is not JSON: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (!isPlainObject(parsed))
    return { kind: 'unreadable', reason: 'bad_data is not a JSON object' };
  let table: TableRef | undefined;
  try {
    table = readTable({ T: c.targetDest }, 'T', c.targetDest);
  } catch {
    table = undefined; // the retry-age guard's step text ("window state (Firestore): …")
  }
  if (table === undefined) {
    if (typeof parsed.raw_payload !== 'string') {
      return {
        kind: 'unreadable',
        reason: `target ${c.targetDest} is not a table and the row holds no message`,
      };
    }
    const body =
      typeof parsed.raw_payload_base64 === 'string'
        ? Buffer.from(parsed.raw_payload_base64, 'base64')
        : Buffer.from(parsed.raw_payload, 'utf8');
    const attributes = isPlainObject(parsed.attributes)
      ? Object.fromEntries(
          Object.entries(parsed.attributes).filter(
            (e): e is [string, string] => typeof e[1] === 'string',
          ),
        )
      : {};
    return { kind: 'message', body, attributes };
  }
  if (
    isPlainObject(parsed.row) &&
    isPlainObject(parsed.extra_fields) &&
    Object.keys(parsed).length === 2
  ) {
    return { kind: 'row', table, row: { ...parsed.row, ...parsed.extra_fields } };
  }
  return { kind: 'row', table, row: parsed };
}

/** The open bad-data rows matching the selection, oldest first. */
export async function selectBadData(
  ctx: OpsContext,
  selection: RowSelection,
): Promise<BadDataCandidate[]> {
  const { where, params, types } = selectionWhere(selection, {
    time: 'insert_time',
    text: 'error',
    ids: ['source_message_id', 'insert_id', 'row_key'],
    target: 'target_dest',
  });
  const rows = await query<Record<string, unknown>>(
    ctx,
    `SELECT row_key, source_message_id, insert_id, target_dest, error, bad_data
     FROM \`${ctx.tables.badDataOpen}\` WHERE ${where}
     ORDER BY insert_time, row_key LIMIT ${selection.limit}`,
    params,
    types,
  );
  return rows.map((r) => ({
    rowKey: String(r.row_key),
    messageId: typeof r.source_message_id === 'string' ? r.source_message_id : null,
    insertId: typeof r.insert_id === 'string' ? r.insert_id : null,
    targetDest: String(r.target_dest),
    error: String(r.error),
    badData: String(r.bad_data),
  }));
}

/**
 * Runs `bad-data redrive`: a row goes to its table with its original insertId (Silver: with lineage, not counted by
 * the windows again); a parked message goes through the ingest path; a refused row stays open.
 * @throws NotFoundError (exit 3) when no bad-data row, open or resolved, has any of `--ids`; OpsError when BigQuery
 *   or Firestore fail.
 */
export async function redrive(
  ctx: OpsContext,
  options: ReprocessOptions,
  io: Io,
  now: () => number,
): Promise<ReprocessReport> {
  const { started, candidates, report } = await selectOpenRows(ctx, options, now, selectBadData, {
    table: ctx.tables.badData,
    idColumns: ['source_message_id', 'insert_id'],
    notFound: 'bad-data row for {ids}: not a message id or insert_id there',
  });
  if (candidates.length === 0) return report;
  if (options.dryRun) {
    for (const c of candidates) {
      const f = await fixedRow(c, options.fix);
      if (f.kind === 'skipped') {
        report.skipped.push({ messageId: c.messageId, reason: f.reason });
        continue;
      }
      const target = f.plan.kind === 'row' ? c.targetDest : 'ingest path';
      countOutcome(report, target);
      const after = payloadBytes(f.payload).toString('utf8');
      addSample(report, options, c.messageId, f.before, after, target);
    }
    finishTiming(report, candidates.length, started, now);
    return report;
  }
  const writer = new BigQueryRowWriter(ctx.bigquery);
  return runOverRows(
    ctx,
    options,
    report,
    candidates,
    {
      action: 'redrive',
      layer: 'bad_data',
      // Parked messages go through the ingest path, which hashes passenger_id only as this environment says.
      needsIngest: candidates.some((c) => planOf(c).kind === 'message'),
      handle: async (c, run) => {
        const f = await fixedRow(c, options.fix);
        if (f.kind === 'skipped') {
          report.skipped.push({ messageId: c.messageId, reason: f.reason });
          return undefined;
        }
        if (f.plan.kind === 'message') {
          const outcome = await ingestFixed(
            report,
            c.messageId,
            {
              messageId: c.messageId ?? c.rowKey,
              attributes: f.plan.attributes,
              data: payloadBytes(f.payload),
            },
            run.ingest(),
          );
          if (outcome === undefined) return undefined;
          countOutcome(report, outcome.destination);
          return outcome.destination === 'bad_data' ? undefined : outcome;
        }
        return writeRow(c, f.plan.table, f.payload, run.runId);
      },
    },
    io,
    started,
    now,
  );

  /** Writes a fixed row to its target with its original insertId; undefined when refused (then in `failed`). */
  async function writeRow(
    c: BadDataCandidate,
    target: TableRef,
    payload: unknown,
    runId: string,
  ): Promise<Reached | undefined> {
    if (!isPlainObject(payload)) {
      report.skipped.push({
        messageId: c.messageId,
        reason: 'the fix did not return a row (JSON object)',
      });
      return undefined;
    }
    const row: Record<string, unknown> = sameTable(target, ctx.pipeline.tables.silver)
      ? { ...payload, [LINEAGE_COLUMN]: runId }
      : { ...payload };
    try {
      const [result] = await writer.insertRows(target, [
        // The original insertId: a row that did reach the table after all is deduplicated.
        { insertId: c.insertId ?? `redrive:${c.rowKey}`, json: row },
      ]);
      if (result !== undefined && !result.ok) {
        report.failed.push({
          messageId: c.messageId,
          error: `refused by ${c.targetDest}: ${result.error}`,
        });
        return undefined;
      }
    } catch (err) {
      report.failed.push({
        messageId: c.messageId,
        error: `${c.targetDest}: ${err instanceof Error ? err.message : String(err)}`,
      });
      return undefined;
    }
    countOutcome(report, c.targetDest);
    const eventId = typeof row.event_id === 'string' ? row.event_id : null;
    return { destination: c.targetDest, eventId };
  }
}

/** A bad-data row read and fixed (its plan, text before, fixed payload), or why it is skipped. */
async function fixedRow(
  c: BadDataCandidate,
  fix: Fix,
): Promise<
  | {
      kind: 'fixed';
      plan: Exclude<RedrivePlan, { kind: 'unreadable' }>;
      before: string;
      payload: unknown;
    }
  | { kind: 'skipped'; reason: string }
> {
  const plan = planOf(c);
  if (plan.kind === 'unreadable') return { kind: 'skipped', reason: plan.reason };
  const before = plan.kind === 'row' ? stringifyJson(plan.row) : plan.body.toString('utf8');
  const payload = plan.kind === 'row' ? plan.row : jsonOrText(before);
  const fixed = await applyFix(payload, fix, {
    messageId: c.messageId ?? c.rowKey,
    where: c.targetDest,
    reason: c.error,
  });
  if (fixed.kind === 'skipped') return fixed;
  return { kind: 'fixed', plan, before, payload: fixed.payload };
}
