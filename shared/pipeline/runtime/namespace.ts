// Where a pipeline's window state lives in Firestore; operator commands read the layout from here.
import type { AggregationDefinition, AnyPipelineDefinition } from '../definition';
import { COLLECTIONS } from '../../state/firestore-window-store';
import { GROUP_COLLECTIONS } from '../../state/grouped-window-store';
import { HOLDS_COLLECTION } from '../../state/watermark-holds';

/** The keyed store's namespace of one aggregation (the stores' `root`/`pipeline` options). */
export interface AggregationNamespace {
  /** Root collection, e.g. `offviaTelemetryWindows`. */
  readonly root: string;
  /** Document id under the root: the aggregation's name, e.g. `telemetry_device_1m`. */
  readonly pipeline: string;
  /** `root/pipeline`, the document path. */
  readonly path: string;
}

/**
 * The Firestore namespace of `aggregation` in `definition`: `{windowsRoot}/{aggregation name}`. Each aggregation has
 * its own, so two never share a watermark, fireWindows leases, dedup ids or window state.
 */
export function aggregationNamespace(
  definition: Pick<AnyPipelineDefinition, 'firestore'>,
  aggregation: Pick<AggregationDefinition<unknown, unknown, never, never, unknown>, 'name'>,
): AggregationNamespace {
  const root = definition.firestore.windowsRoot;
  return { root, pipeline: aggregation.name, path: `${root}/${aggregation.name}` };
}

/**
 * Collection and document paths of one aggregation's state, relative to the Firestore database: `meta` holds the
 * `watermark` document and the fireWindows leases (`lease`, and `meta/fireWindowsLease~p<n>` per partition); the
 * other collections are the key-groups layout's (grouped-window-store.ts), the shared documents'
 * (firestore-window-store.ts) and the watermark holds (watermark-holds.ts).
 */
export interface AggregationPaths {
  readonly namespace: string;
  readonly meta: string;
  readonly watermark: string;
  readonly lease: string;
  readonly keyGroups: string;
  readonly dedupSpills: string;
  readonly paneBatches: string;
  readonly paneOutbox: string;
  readonly droppedLate: string;
  readonly watermarkHolds: string;
}

/** The paths of {@link AggregationPaths} for one aggregation's namespace. */
export function aggregationPaths(namespace: AggregationNamespace): AggregationPaths {
  const under = (name: string) => `${namespace.path}/${name}`;
  return {
    namespace: namespace.path,
    meta: under(COLLECTIONS.meta),
    watermark: `${under(COLLECTIONS.meta)}/watermark`,
    lease: `${under(COLLECTIONS.meta)}/fireWindowsLease`,
    keyGroups: under(GROUP_COLLECTIONS.groups),
    dedupSpills: under(GROUP_COLLECTIONS.spills),
    paneBatches: under(GROUP_COLLECTIONS.paneBatches),
    paneOutbox: under(COLLECTIONS.outbox),
    droppedLate: under(COLLECTIONS.dropped),
    watermarkHolds: under(HOLDS_COLLECTION),
  };
}

/** Every aggregation of `definition` with its namespace and paths, in the definition's order. */
export function pipelineNamespaces(
  definition: Pick<AnyPipelineDefinition, 'firestore' | 'aggregations'>,
): { readonly aggregation: string; readonly paths: AggregationPaths }[] {
  return definition.aggregations.map((a) => ({
    aggregation: a.name,
    paths: aggregationPaths(aggregationNamespace(definition, a)),
  }));
}
