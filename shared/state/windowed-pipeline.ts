// The per-event path of a windowed pipeline: bundle concurrent events of a (key, window), apply them in one
// transaction, emit the panes they fired, log drops and duplicates, and feed the event time to the watermark.
import type { JsonValue } from '../windowing';
import type { Logger } from '../logging/logger';
import { windowId } from '../windowing';
import { Bundler } from './bundler';
import { joinTransaction } from './grouped-window-store';
import { KeyedWindows } from './keyed-windows';
import type { BundleResult, ElementOutcome, WatermarkReader, WindowElement } from './keyed-windows';
import { logBundleOutcomes } from './session-pipeline';
import type { ElementRecorder, RecorderDeps } from './session-pipeline';

/** Wiring of a WindowedPipeline. */
export interface WindowedPipelineDeps<In, Acc extends JsonValue, Out> extends RecorderDeps {
  readonly keyed: KeyedWindows<In, Acc, Out>;
}

/**
 * `record` counts an event exactly once in its windows and fires the element-driven panes that are due. Events of
 * the same (key, windows) arriving while a transaction for them is running are applied together in the next one.
 */
export class WindowedPipeline<In, Acc extends JsonValue, Out> {
  private readonly bundler: Bundler<readonly JointInput<In>[], ElementOutcome[]>;

  constructor(private readonly deps: WindowedPipelineDeps<In, Acc, Out>) {
    // One member: a bundle (several keys of one group) is one `processGroupBundle` transaction.
    this.bundler = new Bundler(
      (_queueKey, items) =>
        applyBundle([deps], deps.logger, items, async ([part]) =>
          part === undefined
            ? []
            : [await deps.keyed.processGroupBundle(part.bundles, part.watermark)],
        ),
      deps.maxBundle,
    );
  }

  /**
   * Applies one event: resolves once its dedup id and state change are committed (or it was found to be a
   * duplicate, or dropped as too late and counted), after the panes it fired were written or deferred, and after
   * the watermark saw its event time.
   * @throws TransientError when Firestore fails (the caller must not ack; the dedup ids make a retry safe)
   */
  async record(key: string, element: WindowElement<In>): Promise<ElementOutcome> {
    const windows = this.deps.keyed.assign(element.timestampMs);
    const [outcome] = await this.bundler.submit(this.deps.keyed.bundleQueueKey(key, windows), [
      { member: 0, key, element },
    ]);
    await this.deps.tracker.observe(element.timestampMs, element.receivedAtMs);
    if (outcome === undefined) throw new Error('windowed pipeline returned no outcome');
    return outcome;
  }
}

/**
 * How long a joint bundle waits for more events before it starts, ms: the events of the bundle just committed come
 * back with their next messages meanwhile, so a bundle takes about every event in flight rather than half of them
 * (half the transactions per message, docs/performance.md); 10 ms is small beside a transaction's round trips.
 */
export const JOINT_BUNDLE_LINGER_MS = 10;

/** One aggregation of a {@link JointWindowedPipeline}: its name, keyed store path, watermark and pane emitter. */
export type WindowedMember<In, Acc extends JsonValue, Out> = Omit<
  WindowedPipelineDeps<In, Acc, Out>,
  'logger' | 'maxBundle'
>;

/** One event's element for one member (index into the members) under its key. */
export interface JointInput<In> {
  readonly member: number;
  readonly key: string;
  readonly element: WindowElement<In>;
}

/**
 * The per-event path of a pipeline with several aggregations in the key-groups layout: the events in flight in one
 * instance whose (first) windows are the same form one bundle, applied to every aggregation in ONE Firestore
 * transaction (`KeyedWindows.processJointBundle`): each key group touched is read and written once per bundle
 * whatever the number of events and keys in it, and each event's dedup id is kept once, by the first aggregation it
 * takes part in. Beam's bundles: the outcome per element is what each aggregation alone would decide.
 */
export class JointWindowedPipeline<In, Acc extends JsonValue, Out> {
  private readonly bundler: Bundler<readonly JointInput<In>[], ElementOutcome[]>;

  /** @param deps.maxBundle most events per transaction (`OFFVIA_WINDOW_MAX_BUNDLE`) */
  constructor(
    private readonly deps: {
      readonly members: readonly WindowedMember<In, Acc, Out>[];
      readonly logger: Logger;
      readonly maxBundle: number;
    },
  ) {
    this.bundler = new Bundler(
      (_queueKey, items) =>
        applyBundle(deps.members, deps.logger, items, (parts, homes) =>
          KeyedWindows.processJointBundle(parts, homes, joinTransaction),
        ),
      deps.maxBundle,
      JOINT_BUNDLE_LINGER_MS,
    );
  }

  /**
   * Applies one event to the members it takes part in (`inputs`, one per member, all with the same event id):
   * resolves once committed in all of them (or found a duplicate, or dropped as too late), after the panes it fired
   * were written or deferred and each member's watermark saw its event time.
   * @returns one outcome per input, in order
   * @throws TransientError when Firestore fails (the caller must not ack; the dedup ids make a retry safe)
   */
  async record(inputs: readonly JointInput<In>[]): Promise<ElementOutcome[]> {
    const first = inputs[0];
    if (first === undefined) return [];
    const windows = memberOf(this.deps.members, first.member).keyed.assign(
      first.element.timestampMs,
    );
    const outcomes = await this.bundler.submit(windows.map(windowId).join(','), inputs);
    for (const input of inputs) {
      await memberOf(this.deps.members, input.member).tracker.observe(
        input.element.timestampMs,
        input.element.receivedAtMs,
      );
    }
    return outcomes;
  }
}

/**
 * A member of a joint pipeline as an `ElementRecorder`: the ingest finds these and records each event in all the
 * members it takes part in with one `joint.record` call. `record` alone is right only for an event that takes part
 * in this member and in no other (its dedup id is then kept here).
 */
export class JointMemberRecorder<In, Acc extends JsonValue, Out> implements ElementRecorder<In> {
  constructor(
    readonly joint: JointWindowedPipeline<In, Acc, Out>,
    readonly member: number,
  ) {}

  async record(key: string, element: WindowElement<In>): Promise<ElementOutcome> {
    const [outcome] = await this.joint.record([{ member: this.member, key, element }]);
    if (outcome === undefined) throw new Error('joint pipeline returned no outcome');
    return outcome;
  }
}

function memberOf<In, Acc extends JsonValue, Out>(
  members: readonly WindowedMember<In, Acc, Out>[],
  index: number,
): WindowedMember<In, Acc, Out> {
  const member = members[index];
  if (member === undefined) throw new Error(`no aggregation ${index} in the joint pipeline`);
  return member;
}

/** One member's part of a bundle, as `KeyedWindows.processJointBundle` takes it. */
interface BundlePart<In, Acc extends JsonValue, Out> {
  readonly keyed: KeyedWindows<In, Acc, Out>;
  readonly bundles: readonly { key: string; elements: WindowElement<In>[] }[];
  readonly watermark: WatermarkReader;
}

/**
 * One bundle of events: per member, its elements grouped by (key, windows), all applied by `apply` (one
 * transaction; `homes`: event id → index into the parts of the first member it takes part in); then logs the
 * outcomes and writes (or defers) the fired panes.
 */
async function applyBundle<In, Acc extends JsonValue, Out>(
  members: readonly WindowedMember<In, Acc, Out>[],
  logger: Logger,
  items: readonly (readonly JointInput<In>[])[],
  apply: (
    parts: BundlePart<In, Acc, Out>[],
    homes: ReadonlyMap<string, number>,
  ) => Promise<BundleResult[][]>,
): Promise<ElementOutcome[][]> {
  type Group = { key: string; elements: WindowElement<In>[]; slots: [number, number][] };
  const groups = members.map(() => new Map<string, Group>());
  const homes = new Map<string, number>();
  items.forEach((inputs, i) =>
    inputs.forEach((input, j) => {
      const { eventId, timestampMs } = input.element;
      homes.set(eventId, Math.min(homes.get(eventId) ?? input.member, input.member));
      const windows = memberOf(members, input.member).keyed.assign(timestampMs);
      const id = `${input.key}|${windows.map(windowId).join(',')}`;
      const byKey = groups[input.member] as Map<string, Group>;
      const group = byKey.get(id) ?? { key: input.key, elements: [], slots: [] };
      group.elements.push(input.element);
      group.slots.push([i, j]);
      byKey.set(id, group);
    }),
  );
  const used = groups.flatMap((g, m) => (g.size > 0 ? [m] : []));
  const partOf = new Map(used.map((m, p) => [m, p]));
  const results = await apply(
    used.map((m) => {
      const member = memberOf(members, m);
      return {
        keyed: member.keyed,
        bundles: [...(groups[m] ?? new Map<string, Group>()).values()],
        watermark: (pt: number, fresh: boolean) => member.tracker.watermarkMs(pt, fresh),
      };
    }),
    new Map([...homes].map(([id, m]) => [id, partOf.get(m) ?? 0])),
  );
  const outcomes = items.map((inputs) => new Array<ElementOutcome>(inputs.length));
  used.forEach((m, p) => {
    const member = memberOf(members, m);
    [...(groups[m] ?? new Map<string, Group>()).values()].forEach((group, b) => {
      const result = results[p]?.[b];
      if (result === undefined) throw new Error(`no bundle result for key ${group.key}`);
      logBundleOutcomes(logger, member.pipeline, group.key, group.elements, result);
      group.slots.forEach(([i, j], e) => {
        const outcome = result.outcomes[e];
        const row = outcomes[i];
        if (outcome === undefined || row === undefined)
          throw new Error('joint bundle lost an outcome');
        row[j] = outcome;
      });
    });
  });
  await Promise.all(
    used.map((m, p) =>
      memberOf(members, m).emitter.emitOrDefer((results[p] ?? []).flatMap((r) => r.panes)),
    ),
  );
  return outcomes;
}
