// Runs a differential-test scenario through the session layout of the keyed store (SessionWindows over the in-memory
// SessionStore) instead of the pure core alone: the same TestStream steps, delivered as bundles per key and fired by
// due timers, so the store's panes can be compared with the core's (and, through it, Beam's).
import { createReduceFnRunner, MAX_WATERMARK_MS } from '../../shared/windowing';
import type { WindowElement } from '../../shared/state/keyed-windows';
import { MemorySessionStore } from '../support/memory-session-store';
import { SessionWindows } from '../../shared/state/session-windows';
import {
  collectFn,
  comparePaneRecords,
  FINAL_PROCESSING_TIME_ADVANCE_MS,
  SCENARIO_EPOCH_MS,
  toPaneRecord,
  type PaneRecord,
  type Scenario,
} from './differential';

/** How elements are delivered to the store. */
export interface StoreDelivery {
  /**
   * Redeliveries: `(step, position)` → true to deliver that element again (same event id) in a later bundle of its
   * key, and again inside its own bundle. Default: none.
   */
  readonly redeliver?: (step: number, position: number) => boolean;
}

/**
 * The scenario's panes from the session layout, sorted like `runCore`'s, ended the same way (watermark to the end of
 * time, then `FINAL_PROCESSING_TIME_ADVANCE_MS`).
 * @throws Error when the scenario's window function is not sessions
 */
export async function runSessionStore(
  scenario: Scenario,
  delivery: StoreDelivery = {},
): Promise<{ panes: PaneRecord[]; store: MemorySessionStore<number[]> }> {
  if (scenario.strategy.windowFn.kind !== 'sessions') {
    throw new Error(`${scenario.id} does not use session windows`);
  }
  const store = new MemorySessionStore<number[]>();
  const sessions = new SessionWindows({
    pipeline: 'differential',
    runner: createReduceFnRunner(scenario.strategy, collectFn),
    combineFn: collectFn,
    store,
    droppedTtlMs: 60_000,
    paneRow: (pane): Record<string, unknown> => ({ ...toPaneRecord(pane) }),
  });
  let watermarkMs = Number.MIN_SAFE_INTEGER;
  let processingTimeMs = 0;
  const rows: PaneRecord[] = [];
  const pendingRedeliveries = new Map<string, WindowElement<number>[]>();
  const reader = (): Promise<number> => Promise.resolve(watermarkMs);
  const fireDue = async (): Promise<void> => {
    const keys = await store.findSessionKeysDue(null, watermarkMs, processingTimeMs, 1_000_000);
    for (const key of keys.sort()) {
      const fired = await sessions.fireKey(key, watermarkMs, processingTimeMs);
      rows.push(...fired.panes.map((p) => p.row as unknown as PaneRecord));
    }
  };
  const steps = [
    ...scenario.steps,
    { kind: 'watermark' as const, watermarkMs: MAX_WATERMARK_MS - SCENARIO_EPOCH_MS },
    { kind: 'processingTime' as const, advanceByMs: FINAL_PROCESSING_TIME_ADVANCE_MS },
  ];
  for (const [s, step] of steps.entries()) {
    switch (step.kind) {
      case 'elements': {
        const byKey = new Map<string, WindowElement<number>[]>();
        step.elements.forEach((e, i) => {
          const element: WindowElement<number> = {
            eventId: `${s}/${i}`,
            messageId: `m${s}/${i}`,
            value: e.value,
            timestampMs: e.timestampMs + SCENARIO_EPOCH_MS,
            receivedAtMs: processingTimeMs,
          };
          const list = byKey.get(e.key) ?? [];
          list.push(element);
          if (delivery.redeliver?.(s, i) === true) {
            list.push(element);
            pendingRedeliveries.set(e.key, [
              ...(pendingRedeliveries.get(e.key) ?? []),
              { ...element, messageId: `${element.messageId}-again` },
            ]);
          }
          byKey.set(e.key, list);
        });
        for (const key of [...byKey.keys()].sort()) {
          // Redeliveries of earlier steps ride along with the key's next bundle, first.
          const again = s > 0 ? (pendingRedeliveries.get(`${key}@old`) ?? []) : [];
          pendingRedeliveries.delete(`${key}@old`);
          const result = await sessions.processBundle(
            key,
            [
              ...again.map((e) => ({ ...e, receivedAtMs: processingTimeMs })),
              ...(byKey.get(key) ?? []),
            ],
            reader,
          );
          rows.push(...result.panes.map((p) => p.row as unknown as PaneRecord));
        }
        for (const [key, list] of [...pendingRedeliveries.entries()]) {
          if (key.endsWith('@old')) continue;
          pendingRedeliveries.delete(key);
          pendingRedeliveries.set(`${key}@old`, list);
        }
        break;
      }
      case 'watermark':
        watermarkMs =
          step.watermarkMs === MAX_WATERMARK_MS - SCENARIO_EPOCH_MS
            ? MAX_WATERMARK_MS
            : step.watermarkMs + SCENARIO_EPOCH_MS;
        await fireDue();
        break;
      case 'processingTime':
        processingTimeMs += step.advanceByMs;
        await fireDue();
        break;
    }
  }
  const panes = rows.sort(comparePaneRecords);
  return { panes, store };
}
