// Session merging inside one key's state (Java ReduceFnRunner.mergeWindows + MergingActiveWindowSet +
// AfterWatermarkStateMachine.onMerge): which windows merge, and the merged window's state.
import type { CombineFn, JsonValue } from './combine-fn';
import { maxTimestampMs, sameWindow, windowId, type IntervalWindow } from './window';
import { mergeOverlappingWindows } from './window-fns';
import { FRESH_PANE, mergeContributions, type WindowState } from './window-state';

/**
 * Merges the key's active (not CLOSED) windows with a bundle's proto-windows, in place in `byId` (window id →
 * state): windows group by strict overlap and a group's active members move to the merge result, contributions
 * merged; a result that is a new window restarts at pane index 0 (Java `paneInfoTracker.clear`); it is EARLY again
 * unless every active member was LATE and its end is behind the watermark (Java `AfterWatermarkEarlyAndLate.onMerge`);
 * a CLOSED record with the result's bounds wins and stays closed.
 * @returns proto-window id → the window its elements go to (absent: the proto-window itself)
 */
export function mergeSessions<Acc extends JsonValue>(
  combineFn: CombineFn<never, Acc, unknown>,
  byId: Map<string, WindowState<Acc>>,
  protoWindows: readonly IntervalWindow[],
  watermarkMs: number,
): Map<string, IntervalWindow> {
  const active = [...byId.values()].filter((w) => w.pane.phase !== 'CLOSED');
  const activeIds = new Set(active.map((w) => windowId(w.window)));
  const candidates = [
    ...active.map((w) => w.window),
    ...protoWindows.filter((w) => !activeIds.has(windowId(w))),
  ];
  const target = new Map<string, IntervalWindow>();
  for (const { result, members } of mergeOverlappingWindows(candidates)) {
    for (const m of members) target.set(windowId(m), result);
    const activeMembers = members.flatMap((m) => {
      const state = activeIds.has(windowId(m)) ? byId.get(windowId(m)) : undefined;
      return state ? [state] : [];
    });
    const survivor = activeMembers.find((m) => sameWindow(m.window, result));
    if (activeMembers.length === 0 || (activeMembers.length === 1 && survivor)) continue;
    for (const m of activeMembers) byId.delete(windowId(m.window));
    if (byId.has(windowId(result))) continue; // a CLOSED record with the same bounds
    // Both checks mirror Java (an EARLY member always ends after the watermark).
    const stillLate =
      activeMembers.every((m) => m.pane.phase === 'LATE') && maxTimestampMs(result) < watermarkMs;
    byId.set(windowId(result), {
      window: result,
      pane: { ...(survivor ? survivor.pane : FRESH_PANE), phase: stillLate ? 'LATE' : 'EARLY' },
      contribution: mergeContributions(
        combineFn,
        activeMembers.map((m) => m.contribution),
      ),
    });
  }
  return target;
}
