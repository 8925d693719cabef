// `offvia quarantine reprocess`: select open quarantine rows, apply a fix, and send the fixed events through the
// ingest path in-process (validation, Silver, schema drift, window state), with lineage; resolved rows are recorded.
import { isPlainObject } from '../contract/json-payload';
import { Logger } from '../logging/logger';
import { decodeVersioned } from '../pipeline/versioning';
import { query, type OpsContext } from './context';
import { applyFix, parseJson, payloadBytes, stringifyJson, type Fix } from './fix';
import { clip, keyValues, section, table, type Io } from './output';
import { countOutcome, ingestFixed, runOverRows, selectOpenRows } from './run';
import { attributesOf } from './replay-bronze';
import { selectionWhere, type RowSelection } from './selection';

/** An open quarantine row, as `reprocess` reads it from the open view. */
export interface QuarantineCandidate {
  /** The open view's `message_key`. */
  rowKey: string;
  messageId: string | null;
  stage: string;
  reason: string;
  /** RFC 3339 UTC. */
  receivedAt: string;
  /** The message body as bytes (exact base64 copy when it was not UTF-8; Bronze's copy when truncated). */
  body: Buffer | null;
  attributes: Record<string, string>;
}

/** What the command was asked to do. */
export interface ReprocessOptions {
  selection: RowSelection;
  fix: Fix;
  dryRun: boolean;
  concurrency: number;
  operator: string;
  /** Rows shown before/after in a dry run. */
  sampleSize: number;
}

/** One row of a dry run's sample: the payload before and after the fix, and where it would now go. */
export interface SampleRow {
  messageId: string | null;
  before: string;
  after: string | null;
  /** The top-level fields the fix changed, `field: before → after` (JSON values); the whole text when not JSON. */
  changes: string;
  /** `silver`, a quarantine stage, or `skipped: <reason>`. */
  wouldReach: string;
}

/** The result of a run (or a dry run); `--json` prints it. */
export interface ReprocessReport {
  runId: string | null;
  dryRun: boolean;
  fix: string;
  selected: number;
  /** Dry run: rows per stage they would reach (`silver` or a stage). Run: rows per destination. */
  outcomes: Record<string, number>;
  skipped: { messageId: string | null; reason: string }[];
  failed: { messageId: string | null; error: string }[];
  resolutionsWritten: number;
  sample: SampleRow[];
  elapsedMs: number;
  rowsPerSecond: number | null;
  logFile: string | null;
}

/**
 * The open quarantine rows matching the selection, oldest first. Truncated payloads are read whole from Bronze
 * (by message id); a row whose body is in neither gets `body: null` (skipped, it stays open).
 */
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
      receivedAt:
        typeof r.received_timestamp === 'object' &&
        r.received_timestamp !== null &&
        'value' in r.received_timestamp
          ? String(r.received_timestamp.value)
          : String(r.received_timestamp),
      body,
      attributes: attributesOf(r.attributes, messageId ?? String(r.message_key), 'quarantine'),
    };
  });
}

/**
 * The pipeline's settings for a dry run's verdicts, as its ingest function loads them (side inputs from BigQuery),
 * logging nowhere.
 * @throws ConfigError for a bad variable; TransientError when a side input cannot be loaded
 */
function dryRunSettings(ctx: OpsContext): Promise<unknown> {
  return ctx.pipeline.createSettings(ctx.env, {
    bigquery: ctx.bigquery,
    logger: new Logger('offvia', () => undefined),
    now: Date.now,
  });
}

/** The payload a fix is given: the JSON value (numbers exact), or the text when it is not JSON. */
function payloadOf(body: Buffer): unknown {
  const text = body.toString('utf8');
  try {
    return parseJson(text);
  } catch {
    // PARSE_JSON rows: the fix module gets the text to repair.
    return text;
  }
}

/** The fixed bytes of a candidate, or why it is skipped. */
async function fixed(
  c: QuarantineCandidate,
  fix: Fix,
): Promise<{ kind: 'fixed'; bytes: Buffer } | { kind: 'skipped'; reason: string }> {
  if (c.body === null) {
    return { kind: 'skipped', reason: 'payload truncated in quarantine and not found in Bronze' };
  }
  const result = await applyFix(payloadOf(c.body), fix, {
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

/**
 * Runs `quarantine reprocess`. A dry run validates each fixed payload (as ingest would, at the current time) and
 * writes nothing. A run sends each through `ingestPipelineMessage` with the original message id (so Silver's
 * `source_message_id` is the original) and without a publish time (so the retry-age guard, meant for Pub/Sub
 * redeliveries, does not apply); every row that left quarantine gets a resolution row. A row quarantined again
 * stays open, with its new reason.
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
      if (report.sample.length < options.sampleSize) {
        const before = c.body?.toString('utf8') ?? '';
        const after = f.kind === 'fixed' ? f.bytes.toString('utf8') : null;
        report.sample.push({
          messageId: c.messageId,
          before,
          after,
          changes: after === null ? '' : changedFields(before, after),
          wouldReach,
        });
      }
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
  if (r.skipped.length > 0) {
    out.push(
      section(
        'Skipped (still open)',
        table(
          ['message', 'reason'],
          r.skipped.slice(0, 20).map((s) => [s.messageId, s.reason]),
        ),
      ),
    );
  }
  if (r.failed.length > 0) {
    out.push(
      section(
        'Failed (still open; see the run log)',
        table(
          ['message', 'error'],
          r.failed.slice(0, 20).map((s) => [s.messageId, clip(s.error, 100)]),
          100,
        ),
      ),
    );
  }
  if (r.logFile) out.push(`\nlog: ${r.logFile}`);
  return out.join('\n');
}
