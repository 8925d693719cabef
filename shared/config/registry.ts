// Every variable the deployed functions read, grouped as docs/configuration.md shows them. To add a variable:
// give it a spec in its config module's `*_VARS` table, read it there through the spec (`readIntVar`, ...), and
// run `npm run docs:config`; a group of its own goes in `CONFIG_VAR_GROUPS` below.
import { COALESCING_VAR_GROUP } from './coalescing-config';
import { INGEST_VAR_GROUP } from './ingest-config';
import { PASSENGER_ID_VAR_GROUP } from './passenger-id-config';
import { SCHEMA_DRIFT_VAR_GROUP } from './schema-drift-config';
import { type VarGroup, textVar } from './spec';
import { TELEMETRY_VAR_GROUP } from './telemetry-config';
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

/** The groups of docs/configuration.md, in order. */
export const CONFIG_VAR_GROUPS: readonly VarGroup[] = [
  INGEST_VAR_GROUP,
  PASSENGER_ID_VAR_GROUP,
  COALESCING_VAR_GROUP,
  SCHEMA_DRIFT_VAR_GROUP,
  WINDOW_VAR_GROUP,
  TELEMETRY_VAR_GROUP,
  CLIENT_VAR_GROUP,
];
