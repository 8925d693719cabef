// `offvia status`: counts per layer, quarantine and bad data by cause, the retry store, the watermark and windows,
// and the scheduled functions' last runs, over a look-back window.
import { query, type OpsContext } from './context';
import { keyValues, section, table, type Io } from './output';
import {
  countOpenWindows,
  droppedLate,
  fireWindowsLease,
  lastLogEntry,
  readWatermark,
  watermarkHolds,
  retryStoreRows,
} from './state-reader';

/** Everything `status` reports; `--json` prints it as is. Times are RFC 3339 UTC, durations ms. */
export interface StatusReport {
  /** The look-back window: rows received, published or emitted at or after this time. */
  since: string;
  now: string;
  target: { mode: 'local' | 'cloud'; project: string };
  /** Rows per layer since `since` (Silver: table rows and distinct events in the dedup view). */
  layers: {
    bronze: number;
    silverRows: number;
    silverEvents: number;
    quarantineRows: number;
    quarantineMessages: number;
    badDataRows: number;
    goldPanes: number;
    resolutions: number;
  };
  /** Still to handle, whatever their age (the open views). */
  open: { quarantine: number; badData: number };
  quarantineByStage: { stage: string; rows: number; messages: number; open: number }[];
  topQuarantineReasons: { stage: string; reason: string; rows: number }[];
  badDataByCause: { target: string; error: string; rows: number; open: number }[];
  retryStore: { table: string; rows: number; oldest: string | null }[];
  watermark: { watermark: string | null; lagMs: number | null; maxEventTime: string | null };
  /** Failing deliveries holding the watermark back (docs/windows.md, watermark holds). */
  watermarkHolds: { active: number; stuck: number; oldestHeldPublishTime: string | null };
  windows: {
    open: number;
    droppedLate: number;
    droppedExpiredWindow: number;
    droppedClosedWindow: number;
  };
  panesByTiming: { timing: string; panes: number }[];
  lastRuns: {
    fireWindows: { at: string | null; detail: string };
    schemaSweep: { at: string | null; detail: string };
  };
}

const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

/** Number of a COUNT(*) column (the client returns INT64 as number; the emulator sometimes as text). */
function n(value: unknown): number {
  return Number(value ?? 0);
}

/**
 * Collects the report. BigQuery and Firestore reads run concurrently.
 * @throws OpsError (one line) when a backend cannot be reached or refuses a query.
 */
export async function collectStatus(
  ctx: OpsContext,
  sinceMs: number,
  nowMs: number,
): Promise<StatusReport> {
  const t = ctx.tables;
  const p = { since_ms: sinceMs };
  const types = { since_ms: 'INT64' };
  const since = 'TIMESTAMP_MILLIS(@since_ms)';
  const count = async (sql: string, withSince = true): Promise<number> => {
    const [row] = await query<{ n: unknown }>(
      ctx,
      sql,
      withSince ? p : {},
      withSince ? types : undefined,
    );
    return n(row?.n);
  };
  const [
    bronze,
    silverRows,
    silverEvents,
    quarantineRows,
    quarantineMessages,
    badDataRows,
    goldPanes,
    resolutions,
    openQuarantine,
    openBadData,
    stages,
    openStages,
    reasons,
    causes,
    openCauses,
    timings,
  ] = await Promise.all([
    count(`SELECT COUNT(*) AS n FROM \`${t.bronze}\` WHERE publish_time >= ${since}`),
    count(`SELECT COUNT(*) AS n FROM \`${t.silver}\` WHERE ingestion_timestamp >= ${since}`),
    count(`SELECT COUNT(*) AS n FROM \`${t.silverDedup}\` WHERE ingestion_timestamp >= ${since}`),
    count(`SELECT COUNT(*) AS n FROM \`${t.quarantine}\` WHERE received_timestamp >= ${since}`),
    count(
      `SELECT COUNT(DISTINCT COALESCE(source_message_id, raw_payload)) AS n FROM \`${t.quarantine}\` WHERE received_timestamp >= ${since}`,
    ),
    count(`SELECT COUNT(*) AS n FROM \`${t.badData}\` WHERE insert_time >= ${since}`),
    count(`SELECT COUNT(*) AS n FROM \`${t.gold}\` WHERE emitted_at >= ${since}`),
    count(`SELECT COUNT(*) AS n FROM \`${t.resolutions}\` WHERE resolved_at >= ${since}`),
    count(`SELECT COUNT(*) AS n FROM \`${t.quarantineOpen}\``, false),
    count(`SELECT COUNT(*) AS n FROM \`${t.badDataOpen}\``, false),
    query<{ stage: string; rows: unknown; messages: unknown }>(
      ctx,
      `SELECT error_stage AS stage, COUNT(*) AS \`rows\`, COUNT(DISTINCT COALESCE(source_message_id, raw_payload)) AS messages
       FROM \`${t.quarantine}\` WHERE received_timestamp >= ${since} GROUP BY error_stage ORDER BY error_stage`,
      p,
      types,
    ),
    query<{ stage: string; open: unknown }>(
      ctx,
      `SELECT error_stage AS stage, COUNT(*) AS open FROM \`${t.quarantineOpen}\` GROUP BY error_stage`,
    ),
    query<{ stage: string; reason: string; rows: unknown }>(
      ctx,
      `SELECT error_stage AS stage, error_reason AS reason, COUNT(*) AS \`rows\`
       FROM \`${t.quarantine}\` WHERE received_timestamp >= ${since}
       GROUP BY error_stage, error_reason ORDER BY \`rows\` DESC, stage, reason LIMIT 5`,
      p,
      types,
    ),
    query<{ target: string; error: string; rows: unknown }>(
      ctx,
      `SELECT target_dest AS target, error, COUNT(*) AS \`rows\`
       FROM \`${t.badData}\` WHERE insert_time >= ${since}
       GROUP BY target_dest, error ORDER BY \`rows\` DESC, target, error LIMIT 10`,
      p,
      types,
    ),
    query<{ target: string; error: string; open: unknown }>(
      ctx,
      `SELECT target_dest AS target, error, COUNT(*) AS open FROM \`${t.badDataOpen}\` GROUP BY target_dest, error`,
    ),
    query<{ timing: string; panes: unknown }>(
      ctx,
      `SELECT pane_timing AS timing, COUNT(*) AS panes FROM \`${t.gold}\` WHERE emitted_at >= ${since}
       GROUP BY pane_timing ORDER BY pane_timing`,
      p,
      types,
    ),
  ]);
  const [watermark, openWindows, dropped, lease, retry, holds] = await Promise.all([
    readWatermark(ctx),
    countOpenWindows(ctx),
    droppedLate(ctx),
    fireWindowsLease(ctx),
    retryStoreRows(ctx),
    watermarkHolds(ctx, nowMs),
  ]);
  const openByStage = new Map(openStages.map((r) => [r.stage, n(r.open)]));
  const stageNames = [...new Set([...stages.map((s) => s.stage), ...openByStage.keys()])].sort();
  const openByCause = new Map(openCauses.map((r) => [`${r.target}\u0000${r.error}`, n(r.open)]));
  return {
    since: new Date(sinceMs).toISOString(),
    now: new Date(nowMs).toISOString(),
    target: { mode: ctx.mode, project: ctx.projectId },
    layers: {
      bronze,
      silverRows,
      silverEvents,
      quarantineRows,
      quarantineMessages,
      badDataRows,
      goldPanes,
      resolutions,
    },
    open: { quarantine: openQuarantine, badData: openBadData },
    quarantineByStage: stageNames.map((stage) => {
      const row = stages.find((s) => s.stage === stage);
      return {
        stage,
        rows: n(row?.rows),
        messages: n(row?.messages),
        open: openByStage.get(stage) ?? 0,
      };
    }),
    topQuarantineReasons: reasons.map((r) => ({
      stage: r.stage,
      reason: r.reason,
      rows: n(r.rows),
    })),
    badDataByCause: causes.map((c) => ({
      target: c.target,
      error: c.error,
      rows: n(c.rows),
      open: openByCause.get(`${c.target}\u0000${c.error}`) ?? 0,
    })),
    retryStore: retry.map(({ table, rows }) => ({
      table,
      rows: rows.length,
      oldest: iso(
        rows.reduce<number | null>(
          (m, r) => (m === null ? r.processedTimestampMs : Math.min(m, r.processedTimestampMs)),
          null,
        ),
      ),
    })),
    watermark: {
      watermark: iso(watermark.watermarkMs),
      lagMs: watermark.watermarkMs === null ? null : nowMs - watermark.watermarkMs,
      maxEventTime: iso(watermark.maxEventTimeMs),
    },
    watermarkHolds: {
      active: holds.active,
      stuck: holds.stuck,
      oldestHeldPublishTime: iso(holds.oldestPublishTimeMs),
    },
    windows: {
      open: openWindows,
      droppedLate: dropped.total,
      droppedExpiredWindow: dropped.expiredWindow,
      droppedClosedWindow: dropped.closedWindow,
    },
    panesByTiming: timings.map((r) => ({ timing: r.timing, panes: n(r.panes) })),
    lastRuns: {
      fireWindows: lastRun(ctx, 'fireWindows', lease),
      schemaSweep: lastRun(ctx, 'schemaSweep', null),
    },
  };
}

/**
 * A scheduled function's last run: locally the scheduler's last call (its log has the time and the HTTP status);
 * for fireWindows also the lease it took (Firestore, so in the cloud too).
 */
function lastRun(
  ctx: OpsContext,
  fn: 'fireWindows' | 'schemaSweep',
  lease: { holder: string; fence: number; acquiredAtMs: number } | null,
): { at: string | null; detail: string } {
  const entry = lastLogEntry(ctx, 'scheduler', new RegExp(`^${fn} (answered|call failed)`));
  if (entry !== null) {
    return {
      at: typeof entry.time === 'string' ? entry.time : null,
      detail: `scheduler: ${String(entry.message)}`,
    };
  }
  if (lease !== null) {
    return {
      at: iso(lease.acquiredAtMs),
      detail: `lease #${lease.fence} taken by ${lease.holder}`,
    };
  }
  return {
    at: null,
    detail:
      ctx.mode === 'local'
        ? 'no run in the scheduler log'
        : `see Cloud Logging: gcloud logging read 'resource.labels.service_name="${fn.toLowerCase()}"' --limit 5`,
  };
}

const ms = (v: number | null): string => (v === null ? '' : `${(v / 1000).toFixed(1)} s`);

/** The report as tables. */
export function formatStatus(r: StatusReport): string {
  const l = r.layers;
  return [
    `offvia status: ${r.target.mode} project ${r.target.project}, since ${r.since} (now ${r.now})`,
    section(
      'Layers (rows since)',
      table(
        ['layer', 'rows', 'note'],
        [
          ['Bronze', l.bronze, 'every published message'],
          ['Silver', l.silverRows, `${l.silverEvents} distinct events in the dedup view`],
          [
            'quarantine',
            l.quarantineRows,
            `${l.quarantineMessages} messages; ${r.open.quarantine} open (all time)`,
          ],
          ['bad data', l.badDataRows, `${r.open.badData} open (all time)`],
          ['gold panes', l.goldPanes, ''],
          ['resolutions', l.resolutions, 'rows re-driven by offvia'],
        ],
      ),
    ),
    section(
      'Quarantine by stage',
      table(
        ['stage', 'rows', 'messages', 'open'],
        r.quarantineByStage.map((s) => [s.stage, s.rows, s.messages, s.open]),
      ),
    ),
    section(
      'Top quarantine reasons',
      table(
        ['stage', 'rows', 'reason'],
        r.topQuarantineReasons.map((s) => [s.stage, s.rows, s.reason]),
        80,
      ),
    ),
    section(
      'Bad data by target and error',
      table(
        ['target', 'rows', 'open', 'error'],
        r.badDataByCause.map((c) => [c.target, c.rows, c.open, c.error]),
        70,
      ),
    ),
    section(
      'Schema-retry store',
      table(
        ['table', 'rows waiting', 'oldest'],
        r.retryStore.map((s) => [s.table, s.rows, s.oldest]),
      ),
    ),
    section(
      'Windows',
      keyValues([
        ['watermark', r.watermark.watermark ?? 'none yet'],
        ['watermark lag behind the clock', ms(r.watermark.lagMs)],
        ['max event time', r.watermark.maxEventTime ?? ''],
        [
          'watermark holds (failing deliveries)',
          r.watermarkHolds.active === 0
            ? 'none'
            : `${r.watermarkHolds.active} (oldest held publish time ${r.watermarkHolds.oldestHeldPublishTime ?? 'none'}; ` +
              `${r.watermarkHolds.stuck} stuck past OFFVIA_WATERMARK_HOLD_MAX_MS)`,
        ],
        ['open windows', r.windows.open],
        [
          'dropped late (TTL-bounded counters)',
          `${r.windows.droppedLate} (${r.windows.droppedExpiredWindow} expired window, ${r.windows.droppedClosedWindow} closed window)`,
        ],
        [
          'panes emitted since',
          r.panesByTiming.map((p) => `${p.timing} ${p.panes}`).join(', ') || '0',
        ],
      ]),
    ),
    section(
      'Last runs',
      table(
        ['function', 'at', 'detail'],
        [
          ['fireWindows', r.lastRuns.fireWindows.at, r.lastRuns.fireWindows.detail],
          ['schemaSweep', r.lastRuns.schemaSweep.at, r.lastRuns.schemaSweep.detail],
        ],
        90,
      ),
    ),
  ].join('\n');
}

/** Prints the report as tables or JSON. */
export function printStatus(io: Io, report: StatusReport, json: boolean): void {
  io.out(json ? JSON.stringify(report, null, 2) : formatStatus(report));
}
