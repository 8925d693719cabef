// Customer-managed encryption (`--kms-key`): the key's name and location rules, and the Google service agents that
// encrypt and decrypt with it on the system's behalf. docs/deploy.md ("Customer-managed encryption keys") cites the
// Google pages each rule comes from.

/** A Cloud KMS key, `projects/P/locations/L/keyRings/R/cryptoKeys/K`. */
export interface KmsKey {
  /** The full resource name, as every service takes it. */
  readonly name: string;
  /** The project that holds the key (may differ from the deployment's project). */
  readonly project: string;
  /** The key ring's location: a region (`europe-west1`) or a Cloud KMS multi-region (`us`, `europe`). */
  readonly location: string;
  readonly keyRing: string;
  readonly key: string;
}

/** The role every service agent needs on the key (Cloud KMS CryptoKey Encrypter/Decrypter). */
export const KMS_ROLE = 'roles/cloudkms.cryptoKeyEncrypterDecrypter';

/**
 * Parses `projects/P/locations/L/keyRings/R/cryptoKeys/K` (Cloud KMS ids; a key version is refused: every service
 * here uses the key's primary version).
 * @throws Error, one line naming `--kms-key`, for anything else.
 */
export function parseKmsKey(name: string): KmsKey {
  const match =
    /^projects\/([a-z][a-z0-9-]{4,28}[a-z0-9])\/locations\/([a-z][a-z0-9-]*[a-z0-9])\/keyRings\/([A-Za-z0-9_-]{1,63})\/cryptoKeys\/([A-Za-z0-9_-]{1,63})$/.exec(
      name,
    );
  if (match === null) {
    throw new Error(
      `--kms-key: expected projects/P/locations/L/keyRings/R/cryptoKeys/K, got ${JSON.stringify(name)}`,
    );
  }
  const [, project = '', location = '', keyRing = '', key = ''] = match;
  return { name, project, location, keyRing, key };
}

/** The KMS location a dataset's key must be in: its region, `us` for `US`, `europe` for `EU` (BigQuery CMEK). */
export function bigQueryKeyLocation(bqLocation: string): string {
  return bqLocation === 'US' ? 'us' : bqLocation === 'EU' ? 'europe' : bqLocation;
}

/** The KMS location a Firestore database's key must be in: its region, `us` for `nam5`, `europe` for `eur3`. */
export function firestoreKeyLocation(firestoreLocation: string): string {
  if (firestoreLocation === 'nam5') return 'us';
  if (firestoreLocation === 'eur3') return 'europe';
  return firestoreLocation;
}

/**
 * Checks that one key serves every place holding data: functions need it in their region, datasets and the
 * Firestore database in their own location (above); Pub/Sub takes any.
 * @throws Error, one line naming the flag that does not fit.
 */
export function checkKmsKeyFits(
  key: KmsKey,
  o: { readonly region: string; readonly bqLocation: string; readonly firestoreLocation: string },
): void {
  if (key.location !== o.region) {
    throw new Error(
      `--kms-key: the key is in ${key.location}, but Cloud Run functions need a key in their region ${o.region}`,
    );
  }
  if (bigQueryKeyLocation(o.bqLocation) !== key.location) {
    throw new Error(
      `--kms-key: the key is in ${key.location}, but datasets in --bq-location ${o.bqLocation} need a key in ${bigQueryKeyLocation(o.bqLocation)}`,
    );
  }
  if (firestoreKeyLocation(o.firestoreLocation) !== key.location) {
    throw new Error(
      `--kms-key: the key is in ${key.location}, but a Firestore database in ${o.firestoreLocation} needs a key in ${firestoreKeyLocation(o.firestoreLocation)}`,
    );
  }
}

/** A Google service agent that uses the key, and how the plan makes sure it exists. */
export interface KeyUser {
  /** What it encrypts, for the plan's step titles. */
  readonly what: string;
  /** Its email; `${PROJECT_NUMBER}` is the plan's captured project number. */
  readonly email: string;
  /** How the plan provisions the agent when it may not exist yet. */
  readonly provision?: 'identity' | 'bigquery' | 'storage';
  /** `gcloud beta services identity create --service=` for `identity`. */
  readonly service?: string;
}

const agent = (domain: string): string =>
  `service-\${PROJECT_NUMBER}@${domain}.iam.gserviceaccount.com`;
const identity = (service: string) => ({ provision: 'identity' as const, service });

/**
 * Every service agent that needs `KMS_ROLE` on the key: BigQuery's encryption account (made by `bq show
 * --encryption_service_account`), Pub/Sub's, Firestore's ("Use customer-managed encryption keys"), and those of Cloud
 * Run functions: Cloud Functions, Artifact Registry, Cloud Storage, Cloud Run, Eventarc ("Protect your data with
 * CMEK", "Grant service accounts access to the key").
 */
export const KEY_USERS: readonly KeyUser[] = [
  {
    what: 'BigQuery datasets',
    email: 'bq-${PROJECT_NUMBER}@bigquery-encryption.iam.gserviceaccount.com',
    provision: 'bigquery',
  },
  { what: 'Pub/Sub topics', email: agent('gcp-sa-pubsub') },
  {
    what: 'Firestore database',
    email: agent('gcp-sa-firestore'),
    ...identity('firestore.googleapis.com'),
  },
  { what: 'Cloud Run functions (function image)', email: agent('gcf-admin-robot') },
  {
    what: 'Artifact Registry (function images)',
    email: agent('gcp-sa-artifactregistry'),
    ...identity('artifactregistry.googleapis.com'),
  },
  {
    what: 'Cloud Storage (function source)',
    email: agent('gs-project-accounts'),
    provision: 'storage',
  },
  { what: 'Cloud Run (function instances)', email: agent('serverless-robot-prod') },
  {
    what: 'Eventarc (trigger channel)',
    email: agent('gcp-sa-eventarc'),
    ...identity('eventarc.googleapis.com'),
  },
];

/** The function images' repository (id after the name prefix) under `--kms-key`, encrypted with the same key. */
export const FUNCTION_IMAGES_REPOSITORY = 'functions';
