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
 * The key's resource name: `projects/P/locations/L/keyRings/R/cryptoKeys/K`. Cloud KMS ids: a key ring or key id is
 * 1–63 of letters, digits, `_` and `-`; the project is a project id; the location lower-case letters, digits, `-`.
 * A key version (`…/cryptoKeyVersions/N`) is refused: every service here takes the key and uses its primary version.
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

/**
 * The Cloud KMS location a BigQuery dataset's key must be in: a regional dataset takes a key of the same region, the
 * multi-region `US` a key in `us` and `EU` a key in `europe` (BigQuery, "Customer-managed Cloud KMS keys": "create
 * the key ring in a location that matches the location of your BigQuery dataset").
 */
export function bigQueryKeyLocation(bqLocation: string): string {
  if (bqLocation === 'US') return 'us';
  if (bqLocation === 'EU') return 'europe';
  return bqLocation;
}

/**
 * The Cloud KMS location a Firestore database's key must be in: the same region for a regional database, `us` for
 * the `nam5` multi-region and `europe` for `eur3` (Firestore `CmekConfig.kms_key_name`: "Only keys in the same
 * location as this database are allowed").
 */
export function firestoreKeyLocation(firestoreLocation: string): string {
  if (firestoreLocation === 'nam5') return 'us';
  if (firestoreLocation === 'eur3') return 'europe';
  return firestoreLocation;
}

/**
 * Checks that one key can serve every place that holds data. Cloud Run functions take a single-region key in the
 * function's region (and an Artifact Registry repository there with the same key); the datasets and the Firestore
 * database take a key in their own location (above). So `--bq-location` and `--firestore-location` must be the
 * region too; Pub/Sub topics take a key in any location.
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
  /** A command that provisions the agent when it may not exist yet (gcloud words and flags, before `--project`). */
  readonly provision?: 'identity' | 'bigquery' | 'storage';
  /** `gcloud beta services identity create --service=` for `identity`. */
  readonly service?: string;
}

/**
 * Every service agent that needs `KMS_ROLE` on the key. BigQuery: its encryption account `bq-N@bigquery-encryption`
 * (BigQuery CMEK page; created by `bq show --encryption_service_account`). Pub/Sub: `service-N@gcp-sa-pubsub`
 * (Pub/Sub `Topic.kms_key_name`). Cloud Run functions: the Cloud Functions, Artifact Registry, Cloud Storage, Cloud
 * Run and Eventarc service agents ("Protect your data with CMEK", cloud.google.com/functions/docs/securing/cmek,
 * "Grant service accounts access to the key"). Firestore: `service-N@gcp-sa-firestore` ("Use customer-managed
 * encryption keys", cloud.google.com/firestore/docs/use-cmek).
 */
export const KEY_USERS: readonly KeyUser[] = [
  {
    what: 'BigQuery datasets',
    email: 'bq-${PROJECT_NUMBER}@bigquery-encryption.iam.gserviceaccount.com',
    provision: 'bigquery',
  },
  {
    what: 'Pub/Sub topics',
    email: 'service-${PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com',
  },
  {
    what: 'Firestore database',
    email: 'service-${PROJECT_NUMBER}@gcp-sa-firestore.iam.gserviceaccount.com',
    provision: 'identity',
    service: 'firestore.googleapis.com',
  },
  {
    what: 'Cloud Run functions (function image)',
    email: 'service-${PROJECT_NUMBER}@gcf-admin-robot.iam.gserviceaccount.com',
  },
  {
    what: 'Artifact Registry (function images)',
    email: 'service-${PROJECT_NUMBER}@gcp-sa-artifactregistry.iam.gserviceaccount.com',
    provision: 'identity',
    service: 'artifactregistry.googleapis.com',
  },
  {
    what: 'Cloud Storage (function source)',
    email: 'service-${PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com',
    provision: 'storage',
  },
  {
    what: 'Cloud Run (function instances)',
    email: 'service-${PROJECT_NUMBER}@serverless-robot-prod.iam.gserviceaccount.com',
  },
  {
    what: 'Eventarc (trigger channel)',
    email: 'service-${PROJECT_NUMBER}@gcp-sa-eventarc.iam.gserviceaccount.com',
    provision: 'identity',
    service: 'eventarc.googleapis.com',
  },
];

/**
 * The Artifact Registry repository (id after the name prefix) that holds the function images when `--kms-key` is
 * set: Cloud Run functions with a key need `--docker-repository` in a repository encrypted with the same key (the
 * default `gcf-artifacts` one is not).
 */
export const FUNCTION_IMAGES_REPOSITORY = 'functions';
