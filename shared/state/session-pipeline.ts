// The per-event path of a session pipeline: bundle concurrent events of a key, apply them in one transaction over the
// key's sessions, emit the panes they fired, log drops and duplicates, and feed the event time to the watermark.
import type { JsonValue } from '../windowing';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { Bundler } from './bundler';
import type { BundleResult, ElementOutcome, WindowElement } from './keyed-windows';
import type { PaneEmitter } from './pane-emitter';
import type { SessionWindows } from './session-windows';
import type { WatermarkTracker } from './watermark-tracker';

/** What the window-state sink records an event into: the fixed/sliding pipeline or the session one. */
export interface ElementRecorder<In> {
  /**
   * Counts the event once, fires what it makes due, and feeds its event time to the watermark.
   * @throws TransientError when the store fails (the caller must not ack)
   */
  record(key: string, element: WindowElement<In>): Promise<ElementOutcome>;
}

/**
 * Logs what a bundle of one key did to its elements (same order as `result.outcomes`): each duplicate, and each
 * window an element was dropped from with the reason and the watermark it was decided against. Both the
 * fixed/sliding and the session pipelines log through it.
 */
export function logBundleOutcomes(
  logger: Logger,
  pipeline: string,
  key: string,
  elements: readonly WindowElement<unknown>[],
  result: Pick<BundleResult, 'outcomes' | 'watermarkMs'>,
): void {
  result.outcomes.forEach((outcome, i) => {
    const element = elements[i];
    if (element === undefined) return;
    if (outcome.kind === 'duplicate') {
      logs.windowDuplicateIgnored(logger, {
        message_id: element.messageId,
        event_id: element.eventId,
        pipeline,
      });
    }
    for (const drop of outcome.dropped) {
      logs.windowElementDropped(
        logger,
        {
          message_id: element.messageId,
          event_id: element.eventId,
          event_time: logs.iso(element.timestampMs),
          drop_reason: drop.reason,
          watermark_ms: result.watermarkMs,
        },
        { pipeline, key, windowStartMs: drop.window.startMs, windowEndMs: drop.window.endMs },
      );
    }
  });
}

/** Wiring shared by the per-event pipelines: the aggregation's name, watermark, pane emitter and log. */
export interface RecorderDeps {
  readonly pipeline: string;
  readonly tracker: WatermarkTracker;
  readonly emitter: PaneEmitter;
  readonly logger: Logger;
  /** Most events per transaction for one key (session) or one (key, windows) (fixed/sliding). */
  readonly maxBundle: number;
}

/** Wiring of a SessionPipeline. */
export interface SessionPipelineDeps<In, Acc extends JsonValue, Out> extends RecorderDeps {
  readonly sessions: SessionWindows<In, Acc, Out>;
}

/**
 * `record` counts an event exactly once in its key's sessions; events of a key arriving while a transaction for it
 * runs are applied together in the next one (the queue is the key: all its sessions are one record).
 */
export class SessionPipeline<In, Acc extends JsonValue, Out> implements ElementRecorder<In> {
  private readonly bundler: Bundler<WindowElement<In> & { key: string }, ElementOutcome>;

  constructor(private readonly deps: SessionPipelineDeps<In, Acc, Out>) {
    this.bundler = new Bundler((key, items) => this.apply(key, items), deps.maxBundle);
  }

  /**
   * Applies one event: resolves once it is committed (or found a duplicate, or dropped as late and counted), after
   * the panes it fired were written or deferred, and after the watermark saw its event time.
   * @throws TransientError when the store fails
   */
  async record(key: string, element: WindowElement<In>): Promise<ElementOutcome> {
    const outcome = await this.bundler.submit(key, { ...element, key });
    await this.deps.tracker.observe(element.timestampMs, element.receivedAtMs);
    return outcome;
  }

  private async apply(
    key: string,
    items: readonly (WindowElement<In> & { key: string })[],
  ): Promise<ElementOutcome[]> {
    const result = await this.deps.sessions.processBundle(key, items, (pt, fresh) =>
      this.deps.tracker.watermarkMs(pt, fresh),
    );
    logBundleOutcomes(this.deps.logger, this.deps.pipeline, key, items, result);
    await this.deps.emitter.emitOrDefer(result.panes);
    return [...result.outcomes];
  }
}
