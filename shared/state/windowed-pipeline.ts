// The per-event path of a windowed pipeline: bundle concurrent events of a (key, window), apply them in one
// transaction, emit the panes they fired, log drops and duplicates, and feed the event time to the watermark.
import type { JsonValue } from '../windowing';
import type { Logger } from '../logging/logger';
import { Bundler } from './bundler';
import type { ElementOutcome, KeyedWindows, WindowElement } from './keyed-windows';
import type { PaneEmitter } from './pane-emitter';
import { logBundleOutcomes } from './session-pipeline';
import type { WatermarkTracker } from './watermark-tracker';

/** Wiring of a WindowedPipeline. */
export interface WindowedPipelineDeps<In, Acc extends JsonValue, Out> {
  readonly pipeline: string;
  readonly keyed: KeyedWindows<In, Acc, Out>;
  readonly tracker: WatermarkTracker;
  readonly emitter: PaneEmitter;
  readonly logger: Logger;
  /** Most events per transaction for one (key, windows). */
  readonly maxBundle: number;
}

interface Item<In> {
  readonly key: string;
  readonly element: WindowElement<In>;
}

/**
 * `record` counts an event exactly once in its windows and fires the element-driven panes that are due. Events of
 * the same (key, windows) arriving while a transaction for them is running are applied together in the next one.
 */
export class WindowedPipeline<In, Acc extends JsonValue, Out> {
  private readonly bundler: Bundler<Item<In>, ElementOutcome>;

  constructor(private readonly deps: WindowedPipelineDeps<In, Acc, Out>) {
    this.bundler = new Bundler(
      (_queueKey, items) => this.applyBundle(deps.keyed, items),
      deps.maxBundle,
    );
  }

  /**
   * Applies one event: resolves once its ledger entry and state change are committed (or it was found to be a
   * duplicate, or dropped as too late and counted), after the panes it fired were written or deferred, and after
   * the watermark saw its event time.
   * @throws TransientError when Firestore fails (the caller must not ack; the ledger makes a retry safe)
   */
  async record(key: string, element: WindowElement<In>): Promise<ElementOutcome> {
    const windows = this.deps.keyed.assign(element.timestampMs);
    const outcome = await this.bundler.submit(this.deps.keyed.bundleQueueKey(key, windows), {
      key,
      element,
    });
    await this.deps.tracker.observe(element.timestampMs, element.receivedAtMs);
    return outcome;
  }

  /** One bundle: in the key-groups layout it may hold several keys of one group, applied in one transaction. */
  private async applyBundle(
    keyed: KeyedWindows<In, Acc, Out>,
    items: readonly Item<In>[],
  ): Promise<ElementOutcome[]> {
    const byKey = new Map<string, { positions: number[]; elements: WindowElement<In>[] }>();
    items.forEach((item, i) => {
      const entry = byKey.get(item.key) ?? { positions: [], elements: [] };
      entry.positions.push(i);
      entry.elements.push(item.element);
      byKey.set(item.key, entry);
    });
    const keys = [...byKey.entries()];
    const watermark = (pt: number, fresh: boolean) => this.deps.tracker.watermarkMs(pt, fresh);
    const results =
      keys.length === 1
        ? [await keyed.processBundle(keys[0]?.[0] ?? '', keys[0]?.[1].elements ?? [], watermark)]
        : await keyed.processGroupBundle(
            keys.map(([key, entry]) => ({ key, elements: entry.elements })),
            watermark,
          );
    const outcomes: ElementOutcome[] = new Array<ElementOutcome>(items.length);
    keys.forEach(([key, entry], k) => {
      const result = results[k];
      if (result === undefined) throw new Error(`no bundle result for key ${key}`);
      logBundleOutcomes(this.deps.logger, this.deps.pipeline, key, entry.elements, result);
      entry.positions.forEach((position, j) => {
        const outcome = result.outcomes[j];
        if (outcome === undefined) throw new Error(`no outcome for element ${j} of key ${key}`);
        outcomes[position] = outcome;
      });
    });
    await this.deps.emitter.emitOrDefer(results.flatMap((r) => r.panes));
    return outcomes;
  }
}
