// Every variable the deployed functions (and the operator command) read, grouped as docs/configuration.md shows
// them. To add a variable: give it a spec in its config module's `*_VARS` table, read it there through the spec
// (`readIntVar`, ...), and run `npm run docs:config`; an engine group goes in `ENGINE_VAR_GROUPS` below, a
// pipeline's own group in its definition's `config` (collected from the registry).
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { PIPELINES } from '../pipelines';
import { COALESCING_VAR_GROUP } from './coalescing-config';
import { INGEST_VAR_GROUP } from './ingest-config';
import { PASSENGER_ID_VAR_GROUP } from './passenger-id-config';
import { SCHEMA_DRIFT_VAR_GROUP } from './schema-drift-config';
import { type VarGroup, textVar } from './spec';
import { WINDOW_VAR_GROUP } from './window-config';

/** Variables the Google client libraries read themselves; the local stack sets them. */
export const CLIENT_VAR_GROUP: VarGroup = {
  title: 'Emulators (read by the Google client libraries)',
  intro:
    'Unset in Google Cloud; the local stack sets them (`source .local/stack/env`, see ' +
    '[local stack](local-stack.md)). `BIGQUERY_EMULATOR_HOST` is in the ingest table above.',
  vars: [
    textVar({
      name: 'PUBSUB_EMULATOR_HOST',
      defaultText: 'unset (Google Cloud)',
      meaning:
        'the Pub/Sub emulator, `host:port`; the Pub/Sub client then talks to it without credentials',
    }),
    textVar({
      name: 'FIRESTORE_EMULATOR_HOST',
      defaultText: 'unset (Google Cloud)',
      meaning:
        'the Firestore emulator, `host:port`; the Firestore client then talks to it without credentials',
    }),
  ],
};

/**
 * `OFFVIA_INGEST_SUBSCRIPTION`: read by `offvia snapshot` and `offvia seek` only (shared/ops/snapshot.ts), not by
 * the functions. Its accepted values are Pub/Sub's resource-id rule.
 */
export const INGEST_SUBSCRIPTION_VAR = textVar({
  name: 'OFFVIA_INGEST_SUBSCRIPTION',
  defaultText:
    '`booking-events-ingest` on the local stack; in Google Cloud the one `eventarc-*` subscription of the booking topic',
  allowedText:
    'a Pub/Sub subscription id: 3–255 of `A-Z a-z 0-9 - _ . ~ + %`, starting with a letter, not `goog…`',
  meaning:
    'the push subscription that feeds `ingestBooking`, which `offvia snapshot` and `offvia seek` act on ' +
    '(`--subscription` overrides it). Eventarc names it, and names a new one when the trigger is replaced: the deploy ' +
    'prints the current name',
});

/** Variables of the operator command `offvia`, not of the functions. */
export const OPERATOR_VAR_GROUP: VarGroup = {
  title: 'Operator command (offvia)',
  intro:
    "Read by `offvia` only, from its environment or the local stack's env file; see [operations](operations.md).",
  vars: [INGEST_SUBSCRIPTION_VAR],
};

/** The engine's groups, which every pipeline's functions read, in order. */
const ENGINE_VAR_GROUPS: readonly VarGroup[] = [
  INGEST_VAR_GROUP,
  PASSENGER_ID_VAR_GROUP,
  COALESCING_VAR_GROUP,
  SCHEMA_DRIFT_VAR_GROUP,
  WINDOW_VAR_GROUP,
];

/**
 * The groups of docs/configuration.md, in order: the engine's, then each pipeline's own (`config.vars`, in registry
 * order), then the operator command's and the emulators'.
 */
export function configVarGroups(pipelines: readonly AnyPipelineDefinition[]): VarGroup[] {
  return [
    ...ENGINE_VAR_GROUPS,
    ...pipelines.flatMap((p) => (p.config === undefined ? [] : [p.config.vars])),
    OPERATOR_VAR_GROUP,
    CLIENT_VAR_GROUP,
  ];
}

/** The groups of docs/configuration.md for the registered pipelines. */
export const CONFIG_VAR_GROUPS: readonly VarGroup[] = configVarGroups(PIPELINES);
