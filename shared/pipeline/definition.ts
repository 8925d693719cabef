// The pipeline definition: one typed object per pipeline naming everything it is made of, for every tool to iterate.
import type { BigQuery } from '@google-cloud/bigquery';
import type { Env, TableRef } from '../config/env';
import type { VarGroup } from '../config/spec';
import type { Logger } from '../logging/logger';
import type { PubSubMessage } from '../pubsub/message';
import type {
  AccumulationMode,
  CombineFn,
  JsonValue,
  Pane,
  WatermarkPolicy,
  WindowingStrategy,
} from '../windowing';

/** What a contract reads of a Pub/Sub message: the body, the attributes, the ids and the publish time. */
export type ContractMessage = Pick<
  PubSubMessage,
  'data' | 'attributes' | 'messageId' | 'publishTimeMs'
>;

/** Where an accepted event's event time came from; the Silver row records it where a fallback exists. */
export type EventTimeSource =
  /** A field of the payload (booking `event_time`). */
  | 'PAYLOAD'
  /** A message attribute (telemetry `eventTs`). */
  | 'ATTRIBUTE'
  /** Pub/Sub's publish time, the study guide's fallback when the event carries no time of its own. */
  | 'PUBLISH_TIME';

/** What one contract version made of an accepted message (the version is stamped on by the dispatcher). */
export interface VersionAccepted<Row, Element> {
  readonly ok: true;
  /** Stable event id, the same for an event published twice: the Silver insertId and the dedup id. */
  readonly eventId: string;
  /** Event time, epoch ms UTC (an integer within BigQuery TIMESTAMP's range). */
  readonly eventTimeMs: number;
  /** Where `eventTimeMs` came from. */
  readonly eventTimeSource: EventTimeSource;
  /** Named grouping keys an aggregation picks from, e.g. `{ device: 'd-1', region: 'eu-west' }`. */
  readonly keys: Readonly<Record<string, string>>;
  /** The Silver row, as strings/numbers ready for insertAll; it records the contract version. */
  readonly row: Row;
  /** What the aggregations fold in (an exact fare, a reading), already validated. */
  readonly element: Element;
  /** Top-level payload fields the contract does not know, for the drift gate (`sweep`); empty otherwise. */
  readonly extraFields: Readonly<Record<string, unknown>>;
}

/** A rejection: the stage that failed (the quarantine or dead-letter `error_stage`) and a one-line reason. */
export interface VersionRejected {
  readonly ok: false;
  /** One of the contract's `stages`. */
  readonly stage: string;
  /** One line naming the problem (and the field or attribute concerned). */
  readonly reason: string;
  /** Identifying attributes worth a dead-letter column (telemetry: `deviceId`) when present; else empty. */
  readonly context: Readonly<Record<string, string>>;
}

/** The outcome of one version's decoding. */
export type VersionOutcome<Row, Element> = VersionAccepted<Row, Element> | VersionRejected;

/** The outcome of decoding a message: the version it was decoded as (`null` when none applied) is added. */
export type ContractOutcome<Row, Element> =
  | (VersionAccepted<Row, Element> & { readonly version: string })
  | (VersionRejected & { readonly version: string | null });

/** What a pipeline's settings may use at cold start: a BigQuery client (side inputs), a logger and the clock. */
export interface SettingsIo {
  readonly bigquery: BigQuery;
  readonly logger: Logger;
  /** Processing time, epoch ms UTC. */
  readonly now: () => number;
}

/** What a decoder gets besides the message: the receive time and the pipeline's own settings. */
export interface DecodeContext<Settings> {
  /** When the message was received, epoch ms UTC (an integer); the clock is injected so decoding stays pure. */
  readonly receivedAtMs: number;
  /** The pipeline's settings, loaded once at cold start (ranges, skews, reference data). */
  readonly settings: Settings;
  /**
   * The instant the event-time skew and age rules are checked against, epoch ms UTC; absent: `receivedAtMs`.
   * `offvia replay` passes the publish time, so a replayed message gets the verdict it got live.
   */
  readonly rulesAtMs?: number;
}

/**
 * A contract version's lifecycle: `current` is what publishers should send; `accepted` is still decoded (while
 * publishers migrate); `retired` is quarantined at SCHEMA_VALIDATION with a reason naming it.
 */
export type ContractVersionStatus = 'current' | 'accepted' | 'retired';

/** One version of a pipeline's message contract and how it maps to the Silver row. */
export interface ContractVersion<Settings, Row, Element> {
  /** The version as messages name it, e.g. `"1"`. */
  readonly version: string;
  readonly status: ContractVersionStatus;
  /** What this version is and how it differs from the previous one, for docs and reasons. */
  readonly summary: string;
  /**
   * Decodes and validates one message of this version into its Silver row, or a stage and reason. Pure; never
   * throws for bad data (the lab's poison pill).
   */
  decode(message: ContractMessage, context: DecodeContext<Settings>): VersionOutcome<Row, Element>;
}

/** How a message names its contract version. */
export interface VersionSelector {
  /**
   * `attribute`: a Pub/Sub message attribute (cheap: read before the body is parsed). `field`: a top-level field of
   * a JSON object payload, a string or an integer (the payload is parsed once more to read it).
   */
  readonly kind: 'attribute' | 'field';
  /** The attribute's or field's name, e.g. `contractVersion`. */
  readonly name: string;
  /**
   * The version of a message that names none (publishers that predate versioning), or `null` when naming one is
   * required (then its absence is a SCHEMA_VALIDATION rejection).
   */
  readonly whenAbsent: string | null;
}

/**
 * How message data is encoded. `json`: UTF-8 JSON, no Pub/Sub topic schema. `avro` / `protobuf`: a Pub/Sub topic
 * schema refuses non-conforming messages at publish, and the contract decodes that encoding.
 */
export type MessageEncoding =
  | { readonly kind: 'json' }
  | {
      readonly kind: 'avro' | 'protobuf';
      /** The Pub/Sub schema resource id. */
      readonly schemaId: string;
      /** Pub/Sub's message encoding for the schema. */
      readonly encoding: 'JSON' | 'BINARY';
    };

/** A pipeline's versioned message contract. */
export interface PipelineContract<Settings, Row, Element> {
  /** The rejection stages in the order the checks run; the first of them that fails is reported. */
  readonly stages: readonly string[];
  /** How a message names its version. */
  readonly versionFrom: VersionSelector;
  /** Every version ever published, oldest first; exactly one is `current`. */
  readonly versions: readonly ContractVersion<Settings, Row, Element>[];
  readonly encoding: MessageEncoding;
  /** The attribute publishers use as Pub/Sub ordering key (telemetry: `deviceId`), or `null`. */
  readonly orderingKeyAttribute: string | null;
}

/** The Pub/Sub resources of a pipeline. Names follow Pub/Sub's resource-name rules (checked by the registry). */
export interface PipelineTopics {
  /** The topic producers publish to. */
  readonly topic: string;
  /** Where the ingest subscription sends a message after its last delivery attempt (infrastructure failures). */
  readonly deadLetterTopic: string;
  /** The Bronze BigQuery subscription's own dead-letter topic, or `null` without Bronze. */
  readonly bronzeDeadLetterTopic: string | null;
  readonly subscriptions: {
    /** Eventarc's push subscription to the ingest function. */
    readonly ingest: string;
    /** The Bronze BigQuery subscription, or `null` without Bronze. */
    readonly bronze: string | null;
    /** Keeps the dead letters for inspection and replay. */
    readonly deadLetterHold: string;
    /** Keeps the Bronze subscription's dead letters, or `null`. */
    readonly bronzeDeadLetterHold: string | null;
  };
}

/** A pipeline's BigQuery tables (datasets and tables follow BigQuery's id rules) and the files that create them. */
export interface PipelineTables {
  /** Raw copy of every message (Pub/Sub BigQuery subscription, `--write-metadata`), or `null`. */
  readonly bronze: TableRef | null;
  /** Validated events, insertId = the event id. */
  readonly silver: TableRef;
  /** Rejected messages with their stage (the booking quarantine, the telemetry dead-letter table). */
  readonly quarantine: TableRef;
  /** Rows BigQuery refused, rows past the schema-retry budget, messages past the retry-age guard. */
  readonly badData: TableRef;
  /** Reference data the pipeline reads (side inputs), never writes. */
  readonly reference: readonly TableRef[];
  /** Views readers use (deduplicated Silver, latest pane, settled panes). */
  readonly views: readonly TableRef[];
  /** Tables the operator commands write (quarantine resolutions); empty when there are none. */
  readonly operational: readonly TableRef[];
  /**
   * The DDL files creating all of the above, paths relative to the repository root, in the order to apply them;
   * `{{project}}` and `{{location}}` are filled in by the appliers.
   */
  readonly ddlFiles: readonly string[];
}

/** A stream of keyed elements, one windowed pipeline on the keyed store, one gold table. */
export interface AggregationDefinition<Row, Element, In, Acc extends JsonValue, Out> {
  /**
   * The windowed pipeline's name (rule as the pipeline's): its document under the windows root, the gold `pipeline`
   * column and the insertId prefix.
   */
  readonly name: string;
  /** One sentence: what is aggregated per what key. */
  readonly description: string;
  /** Window function, allowed lateness, trigger and accumulation mode (shared/windowing). */
  readonly strategy: WindowingStrategy;
  /** The heuristic watermark of this windowed pipeline. */
  readonly watermarkPolicy: WatermarkPolicy;
  /**
   * Shard documents per (key, window) in the keyed store: a hot key's writes are spread over them and the shards'
   * accumulators merged when the pane fires (the study guide's `key#N` hot-key mitigation).
   */
  readonly shards: number;
  /** The combine (Beam `CombineFn`): associative and commutative, so sharding never changes a pane. */
  readonly combineFn: CombineFn<In, Acc, Out>;
  /**
   * Checks an accumulator read back from Firestore.
   * @throws an error naming the problem for anything this combine did not write
   */
  parseAccumulator(value: unknown): Acc;
  /** The element an accepted event contributes: its key and value, or `null` when it takes no part. */
  input(event: VersionAccepted<Row, Element>): { readonly key: string; readonly value: In } | null;
  /** Where panes go. */
  readonly goldTable: TableRef;
  /**
   * One pane as its gold row (TIMESTAMPs RFC 3339 UTC), with the streaming insertId also kept as a column.
   * @throws RangeError when the pane's key or a time cannot be represented (a caller bug)
   */
  goldRow(
    pane: Pane<Out>,
    insertId: string,
    accumulationMode: AccumulationMode,
  ): Record<string, unknown>;
}

/** Schema drift: whether new payload fields become Silver columns through the scheduled sweep. */
export type SchemaDriftSettings =
  | {
      readonly mode: 'sweep';
      /** Tables drift rows may target (configuration only, never a payload). */
      readonly targetTables: readonly TableRef[];
      /** Length of the schema-change window, minutes (bad-data design: default 3). */
      readonly windowMinutes: number;
      /** Retry budget from first receipt, minutes; then bad data. */
      readonly retryMinutes: number;
    }
  | {
      readonly mode: 'off';
      /** What happens to fields the contract does not know instead, and why. */
      readonly extraFields: string;
    };

/** A deployable function: its entry point (functions/index.ts) and its name after the deploy's name prefix. */
export interface FunctionName {
  /** The registered name (`--entry-point`), camelCase. */
  readonly entryPoint: string;
  /** The function (and Cloud Run service) name after the prefix: lowercase letters, digits and hyphens. */
  readonly baseName: string;
}

/** The functions a pipeline deploys. */
export interface PipelineFunctions {
  /** The Pub/Sub-triggered ingest function. */
  readonly ingest: FunctionName;
  /** The scheduled function that advances the watermark and fires panes. */
  readonly fireWindows: FunctionName;
  /** The scheduled schema sweep, or `null` when schema drift is off. */
  readonly schemaSweep: FunctionName | null;
}

/**
 * The runtime service accounts of a pipeline, as ids after the deploy's name prefix (at most 23 characters: IAM ids
 * are 6–30, the default prefix is `offvia-`). Each pipeline has its own, so a grant never reaches another's.
 */
export interface PipelineServiceAccounts {
  /** Runs the ingest function. */
  readonly ingest: string;
  /** Runs the fireWindows function. */
  readonly fireWindows: string;
  /** Runs the schema sweep, or `null` when schema drift is off (then there is no sweep). */
  readonly schemaSweep: string | null;
  /** Writes the Bronze BigQuery subscription's rows, or `null` without Bronze. */
  readonly bronze: string | null;
}

/** Where a pipeline's state lives in the system's Firestore database: root collections of its own. */
export interface FirestoreNamespace {
  /** Root collection of the keyed window store; each aggregation is a document under it. */
  readonly windowsRoot: string;
  /** Root collection of the schema-drift retry store, or `null` when schema drift is off. */
  readonly schemaDriftRoot: string | null;
}

/**
 * Where a message ends: `silver`, `quarantine` at one of the contract's stages, `badData` (a row BigQuery refused,
 * past a retry budget), or `retryStore` (held for a schema change, `schemaDrift.mode` `sweep` only).
 */
export type SampleOutcome =
  | { readonly layer: 'silver' }
  | { readonly layer: 'quarantine'; readonly stage: string }
  | { readonly layer: 'badData' }
  | { readonly layer: 'retryStore' };

/** A sample message and where it must end: `npm run demo -- --pipeline NAME` publishes them and checks. */
export interface PipelineSample {
  /** What the sample shows, one short phrase (`a valid payment`, `a negative amount`). */
  readonly description: string;
  /** The message data as UTF-8 text (any text: a broken JSON sample is a sample too). */
  readonly data: string;
  /** Message attributes; empty when the contract reads none. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly expect: SampleOutcome;
}

/** A pipeline's own environment variables: their specs (docs/configuration.md shows the group) and their loader. */
export interface PipelineConfig {
  /** The variables, as `shared/config/spec.ts` specs; the registry collects the group into the reference. */
  readonly vars: VarGroup;
  /**
   * Reads and validates them (what `createSettings` calls), without side inputs.
   * @throws ConfigError naming the first bad variable
   */
  load(env: Env): unknown;
}

/**
 * What `offvia` and the dashboard read of a pipeline's tables beyond their names: the column names, which differ by
 * pipeline, and how a Silver row maps back to the keys its aggregations counted it under, so they work for a new
 * pipeline without an edit outside its folder.
 */
export interface OperatorColumns {
  /** Silver (`tables.silver`) and its deduplicated view. */
  readonly silver: {
    /** When a row was written (TIMESTAMP). */
    readonly writtenAt: string;
    /** The event id (the insertId). */
    readonly eventId: string;
    /** The Pub/Sub message id the row came from. */
    readonly messageId: string;
    /** Event time (TIMESTAMP): places the event in its windows. */
    readonly eventTime: string;
    /** The view that keeps one row per event id (one of `tables.views`). */
    readonly dedupView: TableRef;
    /**
     * Other id columns `offvia trace` accepts besides the message id and event id (booking: `booking_id`); their
     * values are also searched as JSON strings inside quarantine payloads and Bronze data.
     */
    readonly lookupColumns: readonly string[];
    /**
     * The column that may hold pseudonymised ids (`hmac1:…`, docs/privacy.md), absent when none does: re-drive
     * commands refuse to write raw ids beside pseudonyms when the operator's environment does not hash them.
     */
    readonly pseudonymColumn?: string;
  };
  /** The quarantine or dead-letter table (`tables.quarantine`). */
  readonly quarantine: {
    readonly stage: string;
    readonly reason: string;
    /** When the message was rejected (TIMESTAMP; the table's partitioning column where it has one). */
    readonly rejectedAt: string;
    readonly messageId: string;
    /**
     * The message body as received (text). `quarantine reprocess` also reads `<payload>_base64` (the exact bytes
     * when they are not UTF-8), `payload_truncated` and `attributes` (JSON) from the open view.
     */
    readonly payload: string;
    /** Other columns `quarantine list` shows (e.g. the device id), in order. */
    readonly extra: readonly string[];
  };
  /**
   * The views of quarantine and bad-data rows without a resolution (`<table>_open` beside each, row keys
   * `message_key` and `row_key`; among `tables.views`), or `null` (`quarantine reprocess`, `bad-data redrive` refuse).
   */
  readonly openViews: { readonly quarantine: TableRef; readonly badData: TableRef } | null;
  /**
   * Where `quarantine reprocess`, `bad-data redrive` and `replay` record what they did to a row (one of
   * `tables.operational`; `resolutions` in the quarantine's dataset), or `null` when the pipeline has none.
   */
  readonly resolutions: TableRef | null;
  /**
   * Per aggregation name: the key a Silver row was counted under (`null` when the row takes no part, e.g. an unknown
   * device in a regional ranking), and the gold table's column holding that key. Rows are as BigQuery returns them
   * (TIMESTAMPs may be `{ value }` objects).
   */
  readonly aggregations: Readonly<
    Record<
      string,
      {
        silverKey(row: Readonly<Record<string, unknown>>): string | null;
        readonly goldKeyColumn: string;
        /**
         * The combine input `input` folds in for this Silver row's event (key: `silverKey`'s), so `gold restate`
         * can recompute a closed window from Silver. Cells are plain JSON (NUMERIC and TIMESTAMP as text), from the
         * dedup view, a bad-data or a retry-store row. Absent when the row lacks what the input needs (e.g. a side
         * input not kept): then `gold restate` refuses the aggregation.
         * @throws Error when a cell is not what the contract wrote (a corrupt row)
         */
        silverValue?(row: Readonly<Record<string, unknown>>): unknown;
        /**
         * Why `key` can never be this aggregation's key, as `expected …` (the `--key` usage line), or `null` when it
         * can be; absent: any text can.
         */
        checkKey?(key: string): string | null;
        /**
         * Columns a restatement pane's gold row carries besides `goldRow`'s (booking: `source = 'restatement'`,
         * which its latest-pane view prefers); every restatement is also known by its insertId prefix `restate~`.
         */
        readonly restatementColumns?: Readonly<Record<string, string>>;
      }
    >
  >;
}

/**
 * Everything a pipeline is made of. `Settings` is what its contract reads from the environment at cold start,
 * `Row` its Silver row, `Element` what its aggregations fold in.
 */
export interface PipelineDefinition<Settings, Row, Element> {
  /** The pipeline's name: a lowercase letter, then up to 39 lowercase letters, digits or `_`. */
  readonly name: string;
  /** One sentence for docs and `--help`. */
  readonly description: string;
  readonly pubsub: PipelineTopics;
  readonly contract: PipelineContract<Settings, Row, Element>;
  /**
   * Builds the contract's settings once per instance, at cold start (environment, side inputs).
   * @throws ConfigError naming the first bad variable; TransientError when a side input cannot be loaded
   */
  createSettings(env: Env, io: SettingsIo): Promise<Settings>;
  readonly tables: PipelineTables;
  /**
   * The row of `tables.quarantine` for a rejected message (version `null` when none applied); `parseTimeMs` is when
   * it was decoded, epoch ms UTC; `maxPayloadBytes` the longest payload a row may keep
   * (`OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES`; a row may keep less). Streamed with insertId = the message id.
   * @throws RangeError when `parseTimeMs` cannot be represented (a caller bug)
   */
  quarantineRow(
    message: ContractMessage,
    rejection: { readonly stage: string; readonly reason: string; readonly version: string | null },
    parseTimeMs: number,
    maxPayloadBytes: number,
  ): Record<string, unknown>;
  /** The windowed aggregations, each with its gold table. */
  readonly aggregations: readonly AggregationDefinition<Row, Element, never, JsonValue, unknown>[];
  readonly schemaDrift: SchemaDriftSettings;
  readonly functions: PipelineFunctions;
  /** The runtime service accounts the deploy creates for this pipeline alone. */
  readonly serviceAccounts: PipelineServiceAccounts;
  readonly firestore: FirestoreNamespace;
  /** Sample messages for a receive time `nowMs` (epoch ms UTC), inside the skew and age limits; for the demo. */
  samples(nowMs: number): readonly PipelineSample[];
  /** The pipeline's own environment variables, when it reads any beyond the engine's. */
  readonly config?: PipelineConfig;
  /** The column layout the operator command and the dashboard read. */
  readonly operatorColumns: OperatorColumns;
  /**
   * Optional: the definition as this deployment runs it, with tables, windowing, schema drift and Firestore roots
   * from the environment; applied once per instance at cold start (absent: the definition runs as written). It keeps
   * the name, topics and functions (deployed, not configured) and is idempotent.
   * @throws ConfigError naming the first bad variable
   */
  configure?(env: Env): PipelineDefinition<Settings, Row, Element>;
}

/**
 * The definition as this deployment runs it: `configure(env)` when the definition has the hook, else itself.
 * @throws ConfigError naming the first bad variable
 */
export function configuredDefinition<S, R, E>(
  definition: PipelineDefinition<S, R, E>,
  env: Env,
): PipelineDefinition<S, R, E> {
  return definition.configure?.(env) ?? definition;
}

/** A definition with its type parameters erased, for registries that list pipelines of different shapes. */
export type AnyPipelineDefinition = PipelineDefinition<unknown, unknown, unknown>;

/**
 * Declares an aggregation with its type parameters checked against each other, then erases them for the
 * definition's list (an aggregation is only ever called with the elements of its own pipeline).
 */
export function aggregation<Row, Element, In, Acc extends JsonValue, Out>(
  definition: AggregationDefinition<Row, Element, In, Acc, Out>,
): AggregationDefinition<Row, Element, never, JsonValue, unknown> {
  return definition as unknown as AggregationDefinition<Row, Element, never, JsonValue, unknown>;
}
