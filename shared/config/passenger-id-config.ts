// How ingestBooking stores `passenger_id` in Silver: as received, or pseudonymised with a keyed hash (HMAC-SHA256)
// whose key comes from Secret Manager. Read once at cold start by ingestBooking only (docs/privacy.md).
import { createHash } from 'node:crypto';
import { ConfigError } from '../errors';
import { type Env, readOptionalString } from './env';
import { type VarGroup, textVar } from './spec';

/**
 * Shortest HMAC key accepted, in bytes: the SHA-256 output length. RFC 2104 §3: a key shorter than the hash output
 * "is strongly discouraged" (it weakens the function's security); longer keys add nothing.
 */
export const MIN_HMAC_KEY_BYTES = 32;

/** `OFFVIA_PASSENGER_ID_MODE` values. */
export const PASSENGER_ID_MODES = ['raw', 'hmac-sha256'] as const;

/**
 * The HMAC key, kept out of logs: `JSON.stringify` (the cold-start configuration line) and `String()` show only its
 * length and a fingerprint (the first 12 hex digits of the key's SHA-256), enough to tell two keys apart after a
 * rotation and nothing about the key.
 */
export class PassengerIdKey {
  readonly #bytes: Buffer;
  /** First 12 hex digits of SHA-256 over the key bytes. */
  readonly fingerprint: string;

  /** @throws RangeError when the key is shorter than MIN_HMAC_KEY_BYTES. */
  constructor(bytes: Buffer) {
    if (bytes.length < MIN_HMAC_KEY_BYTES) {
      throw new RangeError(
        `an HMAC key needs at least ${MIN_HMAC_KEY_BYTES} bytes, got ${bytes.length}`,
      );
    }
    this.#bytes = Buffer.from(bytes);
    this.fingerprint = createHash('sha256').update(this.#bytes).digest('hex').slice(0, 12);
  }

  /** The key bytes, for `createHmac` only. */
  bytes(): Buffer {
    return this.#bytes;
  }

  toJSON(): { bytes: number; fingerprint: string } {
    return { bytes: this.#bytes.length, fingerprint: this.fingerprint };
  }

  toString(): string {
    return `[HMAC key ${this.#bytes.length} bytes, sha256 ${this.fingerprint}…]`;
  }
}

/** What ingestBooking does with `passenger_id` before Silver. */
export type PassengerIdConfig =
  { readonly mode: 'raw' } | { readonly mode: 'hmac-sha256'; readonly key: PassengerIdKey };

/** The variables `loadPassengerIdConfig` reads; docs/configuration.md is generated from these specs. */
export const PASSENGER_ID_VARS = {
  mode: textVar({
    name: 'OFFVIA_PASSENGER_ID_MODE',
    defaultText: '`raw`',
    allowedText: '`raw` or `hmac-sha256`',
    meaning:
      '`raw` stores `passenger_id` as received; `hmac-sha256` stores `hmac1:` + the hex HMAC-SHA256 of it under ' +
      '`OFFVIA_PASSENGER_ID_HMAC_KEY` in Silver, the schema-retry store and bad data (same id, same value: joins ' +
      'work). The deploy sets it with `--passenger-id-hmac-secret` ([privacy](privacy.md))',
  }),
  key: textVar({
    name: 'OFFVIA_PASSENGER_ID_HMAC_KEY',
    defaultText: 'unset (required with `hmac-sha256`)',
    allowedText: `base64 of at least ${MIN_HMAC_KEY_BYTES} bytes (RFC 2104: no shorter than the hash)`,
    meaning:
      "the HMAC key, a secret: the deploy mounts a pinned Secret Manager version into `ingestBooking`'s " +
      'environment (`--set-secrets`), never a plain `--env`; logged only as its SHA-256 fingerprint',
  }),
} as const;

/** The reference section of the privacy variables. */
export const PASSENGER_ID_VAR_GROUP: VarGroup = {
  title: 'Privacy: passenger_id',
  intro:
    'Read by `ingestBooking` only, at cold start; see [privacy](privacy.md) for what each mode protects and what ' +
    'it does not (Bronze and quarantine keep the raw payload).',
  vars: Object.values(PASSENGER_ID_VARS),
};

/**
 * Reads OFFVIA_PASSENGER_ID_MODE and, for `hmac-sha256`, OFFVIA_PASSENGER_ID_HMAC_KEY (standard or URL-safe base64,
 * surrounding whitespace ignored).
 * @throws ConfigError naming the variable: an unknown mode, a missing key, a key that is not base64 or is shorter
 * than MIN_HMAC_KEY_BYTES, or a key set while the mode is `raw` (the operator would believe ids are protected).
 */
export function loadPassengerIdConfig(env: Env): PassengerIdConfig {
  const { mode: modeSpec, key: keySpec } = PASSENGER_ID_VARS;
  const raw = readOptionalString(env, modeSpec.name) ?? 'raw';
  const mode = PASSENGER_ID_MODES.find((m) => m === raw.toLowerCase());
  if (mode === undefined) {
    throw new ConfigError(
      modeSpec.name,
      `expected one of ${PASSENGER_ID_MODES.join(', ')}, got ${JSON.stringify(raw)}`,
    );
  }
  const text = readOptionalString(env, keySpec.name)?.trim();
  if (mode === 'raw') {
    if (text !== undefined && text !== '') {
      throw new ConfigError(
        keySpec.name,
        `is set but ${modeSpec.name} is raw: passenger_id would be stored as received; set ${modeSpec.name}=hmac-sha256 or unset the key`,
      );
    }
    return { mode };
  }
  if (text === undefined || text === '') {
    throw new ConfigError(keySpec.name, `is required when ${modeSpec.name}=hmac-sha256`);
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    throw new ConfigError(keySpec.name, 'expected base64 (the secret itself is not echoed)');
  }
  const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length < MIN_HMAC_KEY_BYTES) {
    throw new ConfigError(
      keySpec.name,
      `expected at least ${MIN_HMAC_KEY_BYTES} bytes once decoded, got ${bytes.length} (generate one with openssl rand -base64 32)`,
    );
  }
  return { mode, key: new PassengerIdKey(bytes) };
}
