// `offvia quarantine reprocess`: select open quarantine rows, apply a fix, and send the fixed events through the
// ingest path in-process (validation, Silver, schema drift, window state), with lineage; resolved rows are recorded.
import { isPlainObject } from '../contract/json-payload';
import { Logger } from '../logging/logger';
import { decodeVersioned } from '../pipeline/versioning';
import { query, type OpsContext } from './context';
import { applyFix, jsonOrText, parseJson, payloadBytes, stringifyJson, type Fix } from './fix';
import { cellText, keyValues, section, table, type Io } from './output';
import { messageSection } from './replay-format';
import { countOutcome, ingestFixed, runOverRows, selectOpenRows } from './run';
import { attributesOf } from './replay-bronze';
import { selectionWhere, type RowSelection } from './selection';

/**
 * An open quarantine row: `rowKey` the open view's `message_key`, `receivedAt` RFC 3339 UTC, `body` the message bytes
 * (the exact base64 copy when not UTF-8, Bronze's when truncated; null when in neither).
 */
export interface QuarantineCandidate {
  rowKey: string;
  messageId: string | null;
  stage: string;
  reason: string;
  receivedAt: string;
  body: Buffer | null;
  attributes: Record<string, string>;
}

/** What a re-drive command was asked to do; `sampleSize`: rows shown before/after in a dry run. */
export interface ReprocessOptions {
  selection: RowSelection;
  fix: Fix;
  dryRun: boolean;
  concurrency: number;
  operator: string;
  sampleSize: number;
}

/**
 * One row of a dry run's sample: the payload before and after the fix, the fields it changed (`changedFields`), and
 * where it would now go (`silver`, a stage, a table, or `skipped: <reason>`).
 */
export interface SampleRow {
  messageId: string | null;
  before: string;
  after: string | null;
  changes: string;
  wouldReach: string;
}

/** The result of a run or dry run; `outcomes`: rows per destination (dry run: that they would reach). */
export interface ReprocessReport {
  runId: string | null;
  dryRun: boolean;
  fix: string;
  selected: number;
  outcomes: Record<string, number>;
  skipped: { messageId: string | null; reason: string }[];
  failed: { messageId: string | null; error: string }[];
  resolutionsWritten: number;
  sample: SampleRow[];
  elapsedMs: number;
  rowsPerSecond: number | null;
  logFile: string | null;
}

/** The open quarantine rows matching the selection, oldest first; truncated payloads read whole from Bronze. */
export async function selectQuarantine(
  ctx: OpsContext,
  selection: RowSelection,
): Promise<QuarantineCandidate[]> {
  const q = ctx.pipeline.operatorColumns.quarantine;
  const { where, params, types } = selectionWhere(selection, {
    time: q.rejectedAt,
    text: q.reason,
    ids: [q.messageId, 'message_key'],
    stage: q.stage,
  });
  const rows = await query<Record<string, unknown>>(
    ctx,
    `SELECT message_key, ${q.messageId} AS source_message_id, ${q.stage} AS error_stage,
            ${q.reason} AS error_reason, ${q.rejectedAt} AS received_timestamp, ${q.payload} AS raw_payload,
            ${q.payload}_base64 AS raw_payload_base64, payload_truncated, TO_JSON_STRING(attributes) AS attributes
     FROM \`${ctx.tables.quarantineOpen}\` WHERE ${where}
     ORDER BY ${q.rejectedAt}, message_key LIMIT ${selection.limit}`,
    params,
    types,
  );
  const truncated = rows
    .filter((r) => r.payload_truncated === true && typeof r.source_message_id === 'string')
    .map((r) => String(r.source_message_id));
  const bronze = new Map<string, string>();
  if (truncated.length > 0) {
    const found = await query<{ message_id: string; data: string }>(
      ctx,
      `SELECT message_id, data FROM \`${ctx.tables.bronze}\` WHERE message_id IN UNNEST(@ids)`,
      { ids: truncated },
      { ids: ['STRING'] },
    );
    for (const f of found) bronze.set(f.message_id, f.data);
  }
  return rows.map((r) => {
    const messageId = typeof r.source_message_id === 'string' ? r.source_message_id : null;
    let body: Buffer | null;
    if (r.payload_truncated === true) {
      const whole = messageId === null ? undefined : bronze.get(messageId);
      body = whole === undefined ? null : Buffer.from(whole, 'utf8');
    } else if (typeof r.raw_payload_base64 === 'string') {
      body = Buffer.from(r.raw_payload_base64, 'base64');
    } else {
      body = Buffer.from(String(r.raw_payload), 'utf8');
    }
    return {
      rowKey: String(r.message_key),
      messageId,
      stage: String(r.error_stage),
      reason: String(r.error_reason),
      receivedAt: cellText(r.received_timestamp),
      body,
      attributes: attributesOf(r.attributes, messageId ?? String(r.message_key), 'quarantine'),
    };
  });
}

/**
 * The pipeline's settings for a dry run's verdicts, loaded as its ingest function does, logging nowhere.
 * @throws ConfigError for a bad variable; TransientError when a side input cannot be loaded
 */
function dryRunSettings(ctx: OpsContext): Promise<unknown> {
  return ctx.pipeline.createSettings(ctx.env, {
    bigquery: ctx.bigquery,
    logger: new Logger('offvia', () => undefined),
    now: Date.now,
  });
}

/** The fixed bytes of a candidate, or why it is skipped. */
async function fixed(
  c: QuarantineCandidate,
  fix: Fix,
): Promise<{ kind: 'fixed'; bytes: Buffer } | { kind: 'skipped'; reason: string }> {
  if (c.body === null) {
    return { kind: 'skipped', reason: 'payload truncated in quarantine and not found in Bronze' };
  }
  const result = await applyFix(jsonOrText(c.body.toString('utf8')), fix, {
    messageId: c.messageId ?? c.rowKey,
    where: c.stage,
    reason: c.reason,
  });
  if (result.kind === 'skipped') return result;
  return { kind: 'fixed', bytes: payloadBytes(result.payload) };
}

/** `field: before → after` for each top-level field that differs (JSON objects), else `before → after`. */
export function changedFields(before: string, after: string): string {
  let a: unknown;
  let b: unknown;
  try {
    a = parseJson(before);
    b = parseJson(after);
  } catch {
    return before === after ? 'unchanged' : `${before} → ${after}`;
  }
  if (!isPlainObject(a) || !isPlainObject(b))
    return before === after ? 'unchanged' : `${before} → ${after}`;
  const show = (x: unknown): string => (x === undefined ? '(absent)' : stringifyJson(x));
  const changes = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((k) => show(a[k]) !== show(b[k]))
    .map((k) => `${k}: ${show(a[k])} → ${show(b[k])}`);
  return changes.length === 0 ? 'unchanged' : changes.join(', ');
}

/** Adds a dry run's sample row while the sample has room; `after` null: the row is skipped. */
export function addSample(
  report: ReprocessReport,
  options: Pick<ReprocessOptions, 'sampleSize'>,
  messageId: string | null,
  before: string,
  after: string | null,
  wouldReach: string,
): void {
  if (report.sample.length >= options.sampleSize) return;
  const changes = after === null ? '' : changedFields(before, after);
  report.sample.push({ messageId, before, after, changes, wouldReach });
}

/**
 * Runs `quarantine reprocess`: a dry run validates each fixed payload as ingest would now and writes nothing; a run
 * ingests each with its original message id (`ingestFixed`) and resolves the rows that left quarantine.
 * @throws NotFoundError (exit 3) when no quarantine row, open or resolved, has any of `--ids`; OpsError when
 *   BigQuery or Firestore fail.
 */
export async function reprocess(
  ctx: OpsContext,
  options: ReprocessOptions,
  io: Io,
  now: () => number,
): Promise<ReprocessReport> {
  const { started, candidates, report } = await selectOpenRows(
    ctx,
    options,
    now,
    selectQuarantine,
    {
      table: ctx.tables.quarantine,
      idColumns: [ctx.pipeline.operatorColumns.quarantine.messageId],
      notFound: 'quarantine row for {ids}: not a quarantined message id',
    },
  );
  if (options.dryRun) {
    let settings: unknown;
    for (const c of candidates) {
      const f = await fixed(c, options.fix);
      let wouldReach: string;
      if (f.kind === 'skipped') {
        report.skipped.push({ messageId: c.messageId, reason: f.reason });
        wouldReach = `skipped: ${f.reason}`;
      } else {
        const v = decodeVersioned(
          ctx.pipeline.contract,
          {
            messageId: c.messageId ?? c.rowKey,
            data: f.bytes,
            attributes: c.attributes,
            publishTimeMs: undefined,
          },
          { receivedAtMs: now(), settings: (settings ??= await dryRunSettings(ctx)) },
        );
        wouldReach = v.ok ? 'silver' : v.stage;
        countOutcome(report, wouldReach);
      }
      const after = f.kind === 'fixed' ? f.bytes.toString('utf8') : null;
      addSample(report, options, c.messageId, c.body?.toString('utf8') ?? '', after, wouldReach);
    }
    report.elapsedMs = now() - started;
    return report;
  }

  if (candidates.length === 0) return report;
  return runOverRows(
    ctx,
    options,
    report,
    candidates,
    {
      action: 'reprocess',
      layer: 'quarantine',
      needsIngest: true,
      handle: async (c, run) => {
        const f = await fixed(c, options.fix);
        if (f.kind === 'skipped') {
          report.skipped.push({ messageId: c.messageId, reason: f.reason });
          return undefined;
        }
        const outcome = await ingestFixed(
          report,
          c.messageId,
          { messageId: c.messageId ?? c.rowKey, attributes: c.attributes, data: f.bytes },
          run.ingest(),
        );
        if (outcome === undefined) return undefined;
        countOutcome(report, outcome.destination);
        return outcome.destination === 'quarantine' ? undefined : outcome;
      },
    },
    io,
    started,
    now,
  );
}

/** The report as text. */
export function formatReprocess(r: ReprocessReport, what = 'quarantine reprocess'): string {
  if (r.selected === 0) return `${what}: no open row matches the selection; nothing to do`;
  const head = r.dryRun
    ? `${what} --dry-run: ${r.selected} open rows selected, fix: ${r.fix}; nothing written`
    : `${what} run ${r.runId}: ${r.selected} rows, fix: ${r.fix}, ${(r.elapsedMs / 1000).toFixed(1)} s${r.rowsPerSecond === null ? '' : ` (${r.rowsPerSecond} rows/s)`}`;
  const out = [
    head,
    section(
      r.dryRun ? 'Would reach' : 'Outcomes',
      keyValues([
        ...Object.entries(r.outcomes).sort(),
        ['skipped', r.skipped.length],
        ...(r.dryRun
          ? []
          : ([
              ['failed', r.failed.length],
              ['resolved (resolution rows)', r.resolutionsWritten],
            ] as const)),
      ]),
    ),
  ];
  if (r.sample.length > 0) {
    out.push(
      section(
        'Sample (before → after)',
        table(
          ['message', 'payload before', 'fix changed', 'would reach'],
          r.sample.map((s) => [s.messageId, s.before, s.changes, s.wouldReach]),
          60,
        ),
      ),
    );
  }
  out.push(
    ...messageSection(
      'Skipped (still open)',
      'reason',
      r.skipped.map((s) => [s.messageId, s.reason]),
      60,
    ),
    ...messageSection(
      'Failed (still open; see the run log)',
      'error',
      r.failed.map((s) => [s.messageId, s.error]),
    ),
  );
  if (r.logFile) out.push(`\nlog: ${r.logFile}`);
  return out.join('\n');
}
