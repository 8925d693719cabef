// What a plan is built from: the user's options (deploy.sh flags), what the repository holds, and the names
// that follow from them, checked against the rules of the services that receive them.
import { readFirestoreDatabase } from '../../shared/config/ingest-config';
import { functionEnvName } from '../local/resources';
import { SUPPORTED_RUNTIMES } from './functions';
import { checkKmsKeyFits, parseKmsKey } from './kms';
import type { SqlFile } from './sql';
import type { Step } from './steps';

/** What the user chose (deploy.sh flags). */
export interface DeployOptions {
  readonly project: string;
  readonly region: string;
  /** BigQuery location of the datasets (`{{location}}` in sql/). */
  readonly bqLocation: string;
  /** Location of the Firestore database, used only when the plan creates it. */
  readonly firestoreLocation: string;
  /** The system's own Firestore database (`--firestore-database`): the only one its grants and teardown reach. */
  readonly firestoreDatabase: string;
  /** Prefix of the names of functions, service accounts, scheduler jobs, metrics and alert policies. */
  readonly namePrefix: string;
  /** `--publisher` principals, each granted `roles/pubsub.publisher` on booking's topic only. */
  readonly publishers: readonly string[];
  /** `--quarantine-retention-days`: `partition_expiration_days` of the quarantine and bad-data tables; 0: forever. */
  readonly quarantineRetentionDays: number;
  /** `--topic-retention` (`7d`; 10m–31d): how far back a subscription can seek and replay. */
  readonly topicRetention: string;
  /** Alert notification channels, `projects/P/notificationChannels/ID`. */
  readonly notificationChannels: readonly string[];
  /** `--env KEY=VALUE` overrides of the functions' OFFVIA_* variables. */
  readonly envOverrides: Readonly<Record<string, string>>;
  /** Firestore collection groups whose `expireAt` field gets a TTL policy. */
  readonly ttlCollectionGroups: readonly string[];
  /** Where the metric and policy JSON files are written, as the plan refers to them (relative to the repo). */
  readonly outDir: string;
  /** `gcloud functions deploy --runtime`: one of SUPPORTED_RUNTIMES (default DEFAULT_RUNTIME, functions.ts). */
  readonly runtime: string;
  /** `--kms-key` (`projects/P/locations/L/keyRings/R/cryptoKeys/K`, in the region); unset: Google-managed. */
  readonly kmsKey?: string;
  /** `--passenger-id-hmac-secret`: `S:N` or `projects/P/secrets/S/versions/N`, a pinned version; unset: no HMAC. */
  readonly passengerIdHmacSecret?: string;
  /** `--pipeline` names; absent: booking alone (deploy.sh passes every registered one; docs/deploy.md). */
  readonly pipelines?: readonly string[];
}

/** What the repository holds, read by the CLI. */
export interface RepoFacts {
  /** Every registered pipeline's DDL files, filled, by pipeline name. */
  readonly pipelineSqlFiles: Readonly<Record<string, readonly SqlFile[]>>;
  /** Digest of the files `.gcloudignore` lets through (upload.ts). */
  readonly sourceDigest: string;
}

/** A file the plan's commands read. */
export interface GeneratedFile {
  readonly path: string;
  readonly content: string;
}

/** A plan: its header, steps and the files it needs. */
export interface Plan {
  readonly header: readonly string[];
  readonly steps: readonly Step[];
  readonly files: readonly GeneratedFile[];
}

/** Service account of the Eventarc trigger (push identity of ingestBooking). */
export const TRIGGER_SA = 'trigger';
/** Service account whose OIDC tokens Cloud Scheduler sends. */
export const SCHEDULER_SA = 'scheduler';
/** Service account Cloud Build runs the functions' builds as (`--build-service-account`). */
export const BUILD_SA = 'build';
/** Service account the Bronze BigQuery subscription writes as (`--bigquery-service-account-email`). */
export const BRONZE_SA = 'bronze';

/** Every service account base name a deployment may create. */
export const ACCOUNT_BASES: readonly string[] = [
  'ingest',
  'sweep',
  'windows',
  TRIGGER_SA,
  SCHEDULER_SA,
  BUILD_SA,
  BRONZE_SA,
];

/** The Pub/Sub service agent; `${PROJECT_NUMBER}` is captured by the plan's third step. */
export const PUBSUB_AGENT = 'service-${PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com';

/** The names this deployment uses, from the options. */
export class Names {
  constructor(private readonly o: DeployOptions) {}

  /** The function (and Cloud Run service) name of a spec's `baseName`. */
  functionName(baseName: string): string {
    return `${this.o.namePrefix}${baseName}`;
  }

  serviceAccountId(base: string): string {
    return `${this.o.namePrefix}${base}`;
  }

  serviceAccountEmail(base: string): string {
    return `${this.serviceAccountId(base)}@${this.o.project}.iam.gserviceaccount.com`;
  }

  /** The id of a custom role of this deployment (`[A-Za-z0-9_.]{3,64}`, so the prefix's hyphens become `_`). */
  customRoleId(key: string): string {
    return `${this.o.namePrefix.replace(/-/g, '_')}${key}`;
  }

  /** `projects/P/roles/<id>`, as a binding names a custom role. */
  customRoleName(key: string): string {
    return `projects/${this.o.project}/roles/${this.customRoleId(key)}`;
  }

  /** `ingestBooking`, `URL` → `INGEST_BOOKING_URL`, a plan variable. */
  variable(entryPoint: string, what: string): string {
    return `${functionEnvName(entryPoint)}_${what}`;
  }
}

/** BigQuery's spelling of a location: `US` and `EU` in upper case, regions such as `europe-west1` in lower case. */
export function normaliseBqLocation(location: string): string {
  return /^(us|eu)$/i.test(location) ? location.toUpperCase() : location.toLowerCase();
}

/** Seconds of a gcloud duration `INTEGER[UNIT]` with a unit of s, m, h or d; NaN for anything else. */
export function durationSeconds(duration: string): number {
  const match = /^(\d+)([smhd])$/.exec(duration);
  if (match === null) return NaN;
  return Number(match[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as 's' | 'm' | 'h' | 'd'];
}

/** Checks the options against the rules of the services that receive them. @throws Error naming the flag. */
export function validateOptions(o: DeployOptions): void {
  const rules: [string, string, RegExp][] = [
    ['--project', o.project, /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/],
    ['--region', o.region, /^[a-z]+-[a-z]+[0-9]+$/],
    ['--bq-location', o.bqLocation, /^(US|EU|[a-z]+-[a-z]+[0-9]+)$/],
    ['--firestore-location', o.firestoreLocation, /^([a-z]+[0-9]+|[a-z]+-[a-z]+[0-9]+)$/],
    ['--name-prefix', o.namePrefix, /^[a-z][a-z0-9-]{0,13}$/],
  ];
  for (const [flag, value, pattern] of rules) {
    if (!pattern.test(value)) {
      throw new Error(`${flag}: ${JSON.stringify(value)} does not match ${pattern}`);
    }
  }
  // The functions read the same rule at cold start (OFFVIA_FIRESTORE_DATABASE); (default) is refused there too.
  try {
    readFirestoreDatabase({ OFFVIA_FIRESTORE_DATABASE: o.firestoreDatabase });
  } catch (err) {
    throw new Error(`--firestore-database: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  if (!SUPPORTED_RUNTIMES.includes(o.runtime)) {
    throw new Error(
      `--runtime: ${JSON.stringify(o.runtime)} is not one of ${SUPPORTED_RUNTIMES.join(', ')}`,
    );
  }
  for (const group of o.ttlCollectionGroups) {
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,99}$/.test(group)) {
      throw new Error(`--ttl-collection-group: ${JSON.stringify(group)} is not a collection id`);
    }
  }
  if (
    !Number.isInteger(o.quarantineRetentionDays) ||
    o.quarantineRetentionDays < 0 ||
    o.quarantineRetentionDays > 36_500
  ) {
    throw new Error(
      `--quarantine-retention-days: expected an integer 0–36500, got ${o.quarantineRetentionDays}`,
    );
  }
  // Pub/Sub's bounds: 10 minutes to 31 days.
  const retentionS = durationSeconds(o.topicRetention);
  if (!(retentionS >= 600 && retentionS <= 31 * 86_400)) {
    throw new Error(
      `--topic-retention: expected 10m to 31d (e.g. 7d), got ${JSON.stringify(o.topicRetention)}`,
    );
  }
  if (o.kmsKey !== undefined) checkKmsKeyFits(parseKmsKey(o.kmsKey), o);
  if (o.passengerIdHmacSecret !== undefined) passengerIdSecret(o);
  for (const publisher of o.publishers) {
    // One principal (or a named group or domain): allUsers or a principalSet:// would let anyone publish.
    if (
      !/^(serviceAccount|user|group):[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+$|^domain:[a-z0-9.-]+$|^principal:\/\/[A-Za-z0-9._~:/@-]+$/.test(
        publisher,
      )
    ) {
      throw new Error(
        `--publisher: expected serviceAccount:EMAIL, user:EMAIL, group:EMAIL, domain:DOMAIN or principal://… (one principal, not a principalSet://), got ${publisher}`,
      );
    }
  }
  for (const channel of o.notificationChannels) {
    if (!/^projects\/[^/]+\/notificationChannels\/[0-9]+$/.test(channel)) {
      throw new Error(
        `--notification-channel: expected projects/P/notificationChannels/ID, got ${channel}`,
      );
    }
  }
  const names = new Names(o);
  for (const base of ACCOUNT_BASES) {
    // IAM service account ids: 6–30 characters, lowercase letters, digits, hyphens.
    const id = names.serviceAccountId(base);
    if (!/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/.test(id)) {
      throw new Error(`--name-prefix: service account id ${id} is not 6–30 lowercase characters`);
    }
  }
}

/**
 * The secret id and pinned version number of `--passenger-id-hmac-secret` (`S:N` or
 * `projects/<this project>/secrets/S/versions/N`); never `latest`, or instances would hash with different keys.
 * @throws Error, one line naming the flag, for anything else.
 */
export function passengerIdSecret(o: DeployOptions): { secret: string; version: string } {
  const value = o.passengerIdHmacSecret ?? '';
  const match =
    /^([A-Za-z0-9_-]{1,255}):([1-9][0-9]*)$/.exec(value) ??
    new RegExp(
      `^projects/${o.project}/secrets/([A-Za-z0-9_-]{1,255})/versions/([1-9][0-9]*)$`,
    ).exec(value);
  if (match === null) {
    throw new Error(
      `--passenger-id-hmac-secret: expected SECRET:VERSION or projects/${o.project}/secrets/SECRET/versions/VERSION ` +
        `with a version number (not latest), got ${JSON.stringify(value)}`,
    );
  }
  return { secret: match[1] ?? '', version: match[2] ?? '' };
}
