// Reads the Firestore side of the pipeline for the operator: window state, watermark, leases, dropped-late
// counters and the schema-retry store, through the same adapters the functions use.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { FirestoreDriftStore } from '../drift/firestore-store';
import type { RetryRow } from '../drift/store';
import { tableName } from '../config/env';
import { COLLECTIONS, FirestoreWindowStore } from '../state/firestore-window-store';
import { FirestoreWatermarkHoldStore } from '../state/watermark-holds';
import { watermarkHoldAt, type JsonValue, type WatermarkPolicy } from '../windowing';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { GROUP_COLLECTIONS } from '../state/grouped-window-store';
import { firestoreCall, type OpsContext } from './context';

/**
 * Where one windowed pipeline's state lives: the root collection (a pipeline definition's `firestore.windowsRoot`,
 * booking's `OFFVIA_WINDOW_FIRESTORE_ROOT`) and the document under it (the aggregation's name).
 */
export interface WindowNamespace {
  readonly root: string;
  readonly pipeline: string;
}

/**
 * A window store over `namespace`, for the reads that do not look inside accumulators (watermark, dropped-late
 * counters); `parseAccumulator` is the aggregation's own check.
 */
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

/** The watermark document: watermark and max event time (epoch ms; `null` before any event), update time. */
export interface WatermarkView {
  watermarkMs: number | null;
  maxEventTimeMs: number | null;
  updatedAtMs: number | null;
}

/** Reads the pipeline's watermark (`meta/watermark`); all `null` when no event was ever counted. */
export async function readWatermark(
  ctx: OpsContext,
  store: FirestoreWindowStore<JsonValue>,
): Promise<WatermarkView> {
  const stored = await firestoreCall(ctx, 'watermark', () => store.readWatermark());
  if (stored === null) return { watermarkMs: null, maxEventTimeMs: null, updatedAtMs: null };
  // Before the first event the watermark is the windowing core's minimum: report it as "none".
  const wm = stored.state.watermarkMs;
  return {
    watermarkMs: wm <= -8.64e15 || !Number.isFinite(wm) ? null : wm,
    maxEventTimeMs: stored.state.maxEventTimeMs,
    updatedAtMs: stored.updatedAtMs,
  };
}

/** The watermark holds of failing deliveries (docs/windows.md): live, stuck past the cap, and the oldest live one. */
export interface HoldsView {
  /** Holds whose lease runs, stuck ones included. */
  active: number;
  /** Holds past OFFVIA_WATERMARK_HOLD_MAX_MS: they no longer hold the watermark (an operator's problem). */
  stuck: number;
  /** Publish time of the oldest message still holding the watermark, epoch ms; `null` when none holds. */
  oldestPublishTimeMs: number | null;
  /** The highest watermark the holds allow, epoch ms; `null` when none holds. */
  capMs: number | null;
}

/**
 * Reads the 100 oldest watermark holds of one windowed pipeline and applies the hold rule at `nowMs` (epoch ms), as
 * fireWindows does with `policy` (the aggregation's watermark policy).
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
  const held = await firestoreCall(ctx, 'watermark holds', () => store.oldest(100));
  const hold = watermarkHoldAt(policy, held, nowMs, ctx.windows.holdMaxMs);
  return {
    active: hold.active,
    stuck: hold.stuck.length,
    oldestPublishTimeMs: hold.oldestPublishTimeMs,
    capMs: hold.capMs,
  };
}

/**
 * (key, window)s not yet CLOSED (their panes may still change): the keys in the bookkeeping of open key groups (the
 * documents with an event-time timer, read whole).
 */
export async function countOpenWindows(
  ctx: OpsContext,
  namespace: WindowNamespace,
): Promise<number> {
  const base = ctx.firestore().collection(namespace.root).doc(namespace.pipeline);
  const groups = await firestoreCall(ctx, 'open key groups', () =>
    base
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

/** Elements dropped as too late, summed over the counters (their TTL is OFFVIA_WINDOW_DROPPED_TTL_MS). */
export async function droppedLate(
  ctx: OpsContext,
  store: FirestoreWindowStore<JsonValue>,
): Promise<{ total: number; expiredWindow: number; closedWindow: number; windows: number }> {
  const counters = await firestoreCall(ctx, 'dropped-late counters', () => store.readDropped());
  return {
    total: counters.reduce((s, c) => s + c.count, 0),
    expiredWindow: counters.reduce((s, c) => s + c.expiredWindow, 0),
    closedWindow: counters.reduce((s, c) => s + c.closedWindow, 0),
    windows: counters.length,
  };
}

/**
 * The last fireWindows lease of one windowed pipeline: the newest of its partition leases (`meta/fireWindowsLease~p{n}`,
 * read with the other few `meta` documents): who took it, its fencing token (one per run and partition) and when it
 * was taken (epoch ms); `null` before the first run.
 */
export async function fireWindowsLease(
  ctx: OpsContext,
  namespace: WindowNamespace,
): Promise<{ holder: string; fence: number; acquiredAtMs: number } | null> {
  const base = ctx.firestore().collection(namespace.root).doc(namespace.pipeline);
  const snap = await firestoreCall(ctx, 'fireWindows leases', () =>
    base.collection(COLLECTIONS.meta).get(),
  );
  let newest: { holder: string; fence: number; acquiredAtMs: number } | null = null;
  for (const d of snap.docs) {
    const acquired: unknown = d.get('acquired_at_ms');
    if (!d.id.startsWith('fireWindowsLease') || typeof acquired !== 'number') continue;
    // acquired_at_ms is the run's processing clock: the demo's fast-forwarded run shows here as a time ahead.
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

/**
 * Rows waiting in a pipeline's schema-retry store, per target table (at most `limit` per table, oldest first); empty
 * when the pipeline's schema drift is off.
 */
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

/**
 * The local logs of a pipeline: its functions' (`fn-<entry point>`, one JSON entry per line, shared/logging), the
 * Bronze stand-in's and offvia's own run log.
 */
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
 * Entries of the local logs `services` (`.local/stack/logs/<service>.log`) whose `message_id`, `event_id`,
 * `messageId` or one of `idFields` (e.g. `booking_id`) is one of `ids`, oldest first per file, at most `limit`.
 * Empty in the cloud (the caller prints the Cloud Logging query instead).
 */
export function localLogLines(
  ctx: OpsContext,
  ids: readonly string[],
  services: readonly string[],
  idFields: readonly string[] = [],
  limit = 50,
): LogLine[] {
  const dir = ctx.logsDir;
  if (dir === undefined || !existsSync(dir) || ids.length === 0) return [];
  const wanted = new Set(ids);
  const out: LogLine[] = [];
  const files = readdirSync(dir)
    .filter((f) => services.some((s) => f === `${s}.log`))
    .sort();
  for (const file of files) {
    for (const line of readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      // Cheap filter first: the whole file is read, most lines are about other messages.
      if (!line.startsWith('{') || ![...wanted].some((id) => line.includes(id))) continue;
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        // A line cut by a crash mid-write is not an entry.
        continue;
      }
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

/**
 * The last line of a local log whose `message` matches `pattern`, parsed (the scheduler and the functions write
 * one JSON object per line); `null` when none or in the cloud.
 */
export function lastLogEntry(
  ctx: OpsContext,
  service: string,
  pattern: RegExp,
): Record<string, unknown> | null {
  const dir = ctx.logsDir;
  if (dir === undefined) return null;
  const file = path.join(dir, `${service}.log`);
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    if (!line.startsWith('{')) continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      // A line cut by a crash mid-write: not an entry, look further back.
      continue;
    }
    if (typeof entry.message === 'string' && pattern.test(entry.message)) return entry;
  }
  return null;
}
