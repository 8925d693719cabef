// Reads the pipeline's Firestore state and local logs for the operator, through the adapters the functions use.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { FirestoreDriftStore } from '../drift/firestore-store';
import type { RetryRow } from '../drift/store';
import { tableName } from '../config/env';
import { COLLECTIONS, FirestoreWindowStore } from '../state/firestore-window-store';
import { FirestoreWatermarkHoldStore } from '../state/watermark-holds';
import {
  heartbeatHoldAt,
  watermarkHoldAt,
  type JsonValue,
  type WatermarkPolicy,
} from '../windowing';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { GROUP_COLLECTIONS } from '../state/grouped-window-store';
import type { AggregationNamespace } from '../pipeline/runtime/namespace';
import { firestoreCall, type OpsContext } from './context';

/** Where one aggregation's state lives: the pipeline's windows root and the aggregation's document under it. */
type WindowNamespace = Pick<AggregationNamespace, 'root' | 'pipeline'>;

/** A window store over `namespace` for watermark and dropped-late reads; `parseAccumulator` is the aggregation's. */
export function windowStoreAt(
  ctx: OpsContext,
  namespace: WindowNamespace,
  parseAccumulator: (value: unknown) => JsonValue,
): FirestoreWindowStore<JsonValue> {
  return new FirestoreWindowStore<JsonValue>(ctx.firestore(), {
    root: namespace.root,
    pipeline: namespace.pipeline,
    parseAccumulator,
  });
}

/** The watermark document: watermark and max event time (epoch ms; `null` before any event). */
export interface WatermarkView {
  watermarkMs: number | null;
  maxEventTimeMs: number | null;
}

/** Reads the pipeline's watermark (`meta/watermark`); all `null` when no event was ever counted. */
export async function readWatermark(
  ctx: OpsContext,
  store: FirestoreWindowStore<JsonValue>,
): Promise<WatermarkView> {
  const stored = await firestoreCall(ctx, 'watermark', () => store.readWatermark());
  if (stored === null) return { watermarkMs: null, maxEventTimeMs: null };
  // Before the first event the watermark is the windowing core's minimum: "none".
  const wm = stored.state.watermarkMs;
  return {
    watermarkMs: wm <= -8.64e15 || !Number.isFinite(wm) ? null : wm,
    maxEventTimeMs: stored.state.maxEventTimeMs,
  };
}

/**
 * The watermark holds of failing deliveries (docs/windows.md): `active` (stuck ones included), `stuck` (past
 * OFFVIA_WATERMARK_HOLD_MAX_MS, no longer holding) and the oldest held publish time (epoch ms; `null` when none holds).
 */
export interface HoldsView {
  active: number;
  stuck: number;
  oldestPublishTimeMs: number | null;
  /**
   * The newest processed heartbeat (docs/windows.md "Heartbeats"): its publish time (epoch ms; `null`: none yet) and
   * whether it is older than OFFVIA_WATERMARK_HOLD_MAX_MS (`stale`: heartbeats stopped, it no longer holds).
   */
  heartbeat: { publishTimeMs: number | null; stale: boolean };
}

/**
 * Reads the 100 oldest watermark holds and the newest processed heartbeat, and applies the hold and heartbeat rules of
 * `policy` at `nowMs` (epoch ms), as fireWindows does.
 */
export async function watermarkHolds(
  ctx: OpsContext,
  namespace: WindowNamespace,
  policy: WatermarkPolicy,
  nowMs: number,
): Promise<HoldsView> {
  const store = new FirestoreWatermarkHoldStore(
    ctx.firestore(),
    namespace.root,
    namespace.pipeline,
  );
  const [held, newest] = await Promise.all([
    firestoreCall(ctx, 'watermark holds', () => store.oldest(100)),
    firestoreCall(ctx, 'watermark heartbeat', () => store.newestHeartbeat()),
  ]);
  const hold = watermarkHoldAt(policy, held, nowMs, ctx.windows.holdMaxMs);
  const heartbeat = heartbeatHoldAt(policy, newest, nowMs, ctx.windows.holdMaxMs);
  return {
    active: hold.active,
    stuck: hold.stuck.length,
    oldestPublishTimeMs: hold.oldestPublishTimeMs,
    heartbeat: { publishTimeMs: heartbeat.publishTimeMs, stale: heartbeat.stale },
  };
}

/** The aggregation's document under the windows root. */
const stateDoc = (ctx: OpsContext, namespace: WindowNamespace) =>
  ctx.firestore().collection(namespace.root).doc(namespace.pipeline);

/** (key, window)s not yet CLOSED: the EARLY or LATE entries of the key groups with an event-time timer. */
export async function countOpenWindows(
  ctx: OpsContext,
  namespace: WindowNamespace,
): Promise<number> {
  const groups = await firestoreCall(ctx, 'open key groups', () =>
    stateDoc(ctx, namespace)
      .collection(GROUP_COLLECTIONS.groups)
      .where('event_timer_ms', '>=', Number.MIN_SAFE_INTEGER)
      .get(),
  );
  let keys = 0;
  for (const d of groups.docs) {
    const w = d.get('w') as Record<string, { p?: unknown }> | undefined;
    keys += Object.values(w ?? {}).filter((e) => e.p === 'EARLY' || e.p === 'LATE').length;
  }
  return keys;
}

/** Windows `offvia status` lists the dropped-late counters of, newest window first. */
export const DROPPED_WINDOWS_SHOWN = 10;

/** One window's dropped-late counters as `offvia status` shows them; times RFC 3339 UTC. */
export type DroppedLateWindow = {
  windowStart: string;
  windowEnd: string;
  count: number;
  /** Drops because the allowed lateness had passed (`EXPIRED_WINDOW`). */
  expiredWindow: number;
  /** Drops because the window's trigger had finished (`CLOSED_WINDOW`). */
  closedWindow: number;
  lastDroppedAt: string;
  /** The event id of the latest drop, to find its `dropped_late` log line. */
  lastEventId: string;
};

/**
 * Elements dropped as too late, summed over the counters (their TTL is OFFVIA_WINDOW_DROPPED_TTL_MS), and the
 * newest {@link DROPPED_WINDOWS_SHOWN} windows with drops, newest first.
 */
export async function droppedLate(
  ctx: OpsContext,
  store: FirestoreWindowStore<JsonValue>,
): Promise<{
  total: number;
  expiredWindow: number;
  closedWindow: number;
  windows: DroppedLateWindow[];
}> {
  const counters = await firestoreCall(ctx, 'dropped-late counters', () => store.readDropped());
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    total: counters.reduce((s, c) => s + c.count, 0),
    expiredWindow: counters.reduce((s, c) => s + c.expiredWindow, 0),
    closedWindow: counters.reduce((s, c) => s + c.closedWindow, 0),
    windows: [...counters]
      .sort((a, b) => b.windowStartMs - a.windowStartMs)
      .slice(0, DROPPED_WINDOWS_SHOWN)
      .map((c) => ({
        windowStart: iso(c.windowStartMs),
        windowEnd: iso(c.windowEndMs),
        count: c.count,
        expiredWindow: c.expiredWindow,
        closedWindow: c.closedWindow,
        lastDroppedAt: iso(c.lastDroppedAtMs),
        lastEventId: c.lastEventId,
      })),
  };
}

/** A fireWindows partition lease: holder, fencing token and when it was taken (epoch ms). */
export interface Lease {
  holder: string;
  fence: number;
  acquiredAtMs: number;
}

/** The newest fireWindows partition lease (`meta/fireWindowsLease~p{n}`); `null` before the first run. */
export async function fireWindowsLease(
  ctx: OpsContext,
  namespace: WindowNamespace,
): Promise<Lease | null> {
  const snap = await firestoreCall(ctx, 'fireWindows leases', () =>
    stateDoc(ctx, namespace).collection(COLLECTIONS.meta).get(),
  );
  let newest: Lease | null = null;
  for (const d of snap.docs) {
    const acquired: unknown = d.get('acquired_at_ms');
    if (!d.id.startsWith('fireWindowsLease') || typeof acquired !== 'number') continue;
    if (newest === null || acquired > newest.acquiredAtMs) {
      newest = {
        holder: String(d.get('holder')),
        fence: Number(d.get('fence')),
        acquiredAtMs: acquired,
      };
    }
  }
  return newest;
}

/** Rows waiting in the schema-retry store per target table (at most `limit` each, oldest first); none without drift. */
export async function retryStoreRows(
  ctx: OpsContext,
  pipeline: Pick<AnyPipelineDefinition, 'schemaDrift' | 'firestore'>,
  limit = 100_000,
): Promise<{ table: string; rows: RetryRow[] }[]> {
  const root = pipeline.firestore.schemaDriftRoot;
  if (pipeline.schemaDrift.mode !== 'sweep' || root === null) return [];
  const store = new FirestoreDriftStore(ctx.firestore(), root);
  const out: { table: string; rows: RetryRow[] }[] = [];
  for (const ref of pipeline.schemaDrift.targetTables) {
    const table = tableName(ref, ctx.projectId);
    const { rows } = await firestoreCall(ctx, `retry store of ${table}`, () =>
      store.waitingRows(table, limit),
    );
    out.push({ table, rows });
  }
  return out;
}

/** A line of a local log: the service (log file name) and the line as written. */
export interface LogLine {
  service: string;
  line: string;
}

/** The local logs of a pipeline: its functions' (`fn-<entry point>`), the Bronze stand-in's and offvia's own. */
export function pipelineLogs(pipeline: Pick<AnyPipelineDefinition, 'functions'>): string[] {
  const { ingest, fireWindows, schemaSweep } = pipeline.functions;
  return [
    ...[ingest, fireWindows, schemaSweep].flatMap((f) =>
      f === null ? [] : [`fn-${f.entryPoint}`],
    ),
    'bronze-standin',
    'offvia',
  ];
}

/**
 * Entries of the local logs `services` whose `message_id`, `event_id`, `messageId` or one of `idFields` is one of
 * `ids`, oldest first per file, at most `limit`; empty in the cloud.
 */
export function localLogLines(
  ctx: OpsContext,
  ids: readonly string[],
  services: readonly string[],
  idFields: readonly string[] = [],
  limit = 50,
): LogLine[] {
  if (ids.length === 0) return [];
  const wanted = new Set(ids);
  const out: LogLine[] = [];
  for (const file of [...new Set(services.map((s) => `${s}.log`))].sort()) {
    for (const line of logLines(ctx, file)) {
      // Cheap filter first: most lines are about other messages.
      if (![...wanted].some((id) => line.includes(id))) continue;
      const entry = logEntry(line);
      if (entry === null) continue;
      const fields = [
        entry.message_id,
        entry.event_id,
        entry.messageId,
        ...idFields.map((f) => entry[f]),
      ];
      if (fields.some((f) => typeof f === 'string' && wanted.has(f))) {
        out.push({ service: file.replace(/\.log$/, ''), line });
        if (out.length >= limit) return out;
      }
    }
  }
  return out;
}

/** The lines of the local log `file` (`<service>.log`); none in the cloud or before the service wrote one. */
function logLines(ctx: OpsContext, file: string): string[] {
  const full = ctx.logsDir === undefined ? undefined : path.join(ctx.logsDir, file);
  return full !== undefined && existsSync(full) ? readFileSync(full, 'utf8').split('\n') : [];
}

/** A JSON log line parsed; `null` for anything else (a line cut by a crash mid-write is not an entry). */
function logEntry(line: string): Record<string, unknown> | null {
  if (!line.startsWith('{')) return null;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** The last entry of a local log whose `message` matches `pattern`; `null` when none or in the cloud. */
export function lastLogEntry(
  ctx: OpsContext,
  service: string,
  pattern: RegExp,
): Record<string, unknown> | null {
  const lines = logLines(ctx, `${service}.log`);
  for (let i = lines.length - 1; i >= 0; i--) {
    const entry = logEntry(lines[i] ?? '');
    if (typeof entry?.message === 'string' && pattern.test(entry.message)) return entry;
  }
  return null;
}
