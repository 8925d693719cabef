// Versioned contracts (the lab: "version the event contracts"): each message decoded as the version it names.
import type {
  ContractMessage,
  ContractOutcome,
  ContractVersion,
  DecodeContext,
  PipelineContract,
  VersionSelector,
} from './definition';

/** The stage an unknown, retired or missing version is rejected at (the lab's schema stage). */
export const VERSION_REJECTION_STAGE = 'SCHEMA_VALIDATION';

/** Longest version text quoted in a reason; a version is a short label, a longer one is garbage. */
const MAX_QUOTED_VERSION = 32;

function quote(version: string): string {
  return JSON.stringify(
    version.length > MAX_QUOTED_VERSION ? `${version.slice(0, MAX_QUOTED_VERSION)}…` : version,
  );
}

/** The version a message is to be decoded as, or why it cannot be ({@link resolveVersion}). */
export type ResolvedVersion<S, R, E> =
  | { readonly ok: true; readonly version: string; readonly spec: ContractVersion<S, R, E> }
  | {
      readonly ok: false;
      /** The version named, when one was read (`null`: none, or unreadable). */
      readonly version: string | null;
      /** SCHEMA_VALIDATION, or PARSE_JSON for a field-named version in a payload that is not JSON. */
      readonly stage: string;
      /** One line naming the version and the versions accepted. */
      readonly reason: string;
    };

/**
 * The contract version one message is decoded as (`contract.versionFrom`, an attribute or a payload field): none
 * named means `whenAbsent`; an unknown version, a retired one, or none where naming one is required, is refused
 * at SCHEMA_VALIDATION with a reason naming the version and the versions accepted (the lab: adding a version is
 * the safe change, so a producer ahead of the consumer is quarantined, never decoded as another version). Pure.
 */
export function resolveVersion<S, R, E>(
  contract: PipelineContract<S, R, E>,
  message: ContractMessage,
): ResolvedVersion<S, R, E> {
  const { kind, name, whenAbsent } = contract.versionFrom;
  const named = namedVersion(contract.versionFrom, message);
  if (typeof named === 'object') return { ok: false, version: null, ...named };
  const version = named === undefined ? whenAbsent : named;
  const decodable = contract.versions.filter((v) => v.status !== 'retired');
  const accepted = `(accepted: ${decodable.map((v) => v.version).join(', ')})`;
  const refused = (at: string | null, reason: string) =>
    ({ ok: false, version: at, stage: VERSION_REJECTION_STAGE, reason }) as const;
  if (version === null) {
    return refused(null, `missing contract version: ${kind} ${name} is required ${accepted}`);
  }
  const spec = contract.versions.find((v) => v.version === version);
  if (spec === undefined) {
    return refused(null, `unknown contract version ${quote(version)} ${accepted}`);
  }
  if (spec.status === 'retired') {
    return refused(version, `contract version ${quote(version)} is retired ${accepted}`);
  }
  return { ok: true, version, spec };
}

/**
 * Decodes one message with the version it names ({@link resolveVersion}) and that version's mapping; the outcome
 * carries the version (`null` when none applied). Pure; never throws for bad data.
 */
export function decodeVersioned<S, R, E>(
  contract: PipelineContract<S, R, E>,
  message: ContractMessage,
  context: DecodeContext<S>,
): ContractOutcome<R, E> {
  const resolved = resolveVersion(contract, message);
  if (!resolved.ok) {
    const { version, stage, reason } = resolved;
    return { ok: false, stage, reason, context: {}, version };
  }
  return { ...resolved.spec.decode(message, context), version: resolved.version };
}

/** Payload bytes → text, refusing invalid UTF-8 (as the contracts' PARSE_JSON stage does). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The version a message names: the attribute, or the top-level field of its JSON object payload (a string, or an
 * integer written as decimal text); `undefined` when it names none; a stage and reason when a field-named version
 * cannot be read (the payload is not UTF-8 JSON: PARSE_JSON; the field is not a string or integer:
 * SCHEMA_VALIDATION).
 */
function namedVersion(
  selector: VersionSelector,
  message: ContractMessage,
): string | undefined | { stage: string; reason: string } {
  if (selector.kind === 'attribute') {
    const value = message.attributes[selector.name];
    return value === '' ? undefined : value;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(UTF8.decode(message.data));
  } catch (err) {
    return {
      stage: 'PARSE_JSON',
      reason: `payload is not UTF-8 JSON, so its contract version field ${selector.name} cannot be read: ${(err as Error).message}`,
    };
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
  const value = (payload as Record<string, unknown>)[selector.name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return {
    stage: VERSION_REJECTION_STAGE,
    reason: `contract version field ${selector.name} must be a string or an integer, got ${JSON.stringify(value).slice(0, 64)}`,
  };
}

/**
 * Checks a contract's version list: at least one version, unique non-empty labels, exactly one `current`, a
 * `whenAbsent` that names a decodable version, and SCHEMA_VALIDATION among the stages (where version rejections go).
 * @returns the problems found, empty when the contract is well-formed
 */
export function contractProblems<S, R, E>(contract: PipelineContract<S, R, E>): string[] {
  const problems: string[] = [];
  const labels = contract.versions.map((v) => v.version);
  if (labels.length === 0) problems.push('no contract version');
  if (labels.some((l) => !/^[A-Za-z0-9._-]{1,32}$/.test(l))) {
    problems.push(`version labels must be 1-32 of A-Z a-z 0-9 . _ -: ${labels.join(', ')}`);
  }
  if (new Set(labels).size !== labels.length)
    problems.push(`duplicate versions: ${labels.join(', ')}`);
  const current = contract.versions.filter((v) => v.status === 'current');
  if (current.length !== 1) problems.push(`${current.length} current versions, expected exactly 1`);
  const absent = contract.versionFrom.whenAbsent;
  if (absent !== null) {
    const spec = contract.versions.find((v) => v.version === absent);
    if (spec === undefined || spec.status === 'retired') {
      problems.push(`whenAbsent ${JSON.stringify(absent)} is not a decodable version`);
    }
  }
  if (contract.versionFrom.kind === 'field' && !contract.stages.includes('PARSE_JSON')) {
    problems.push('stages must include PARSE_JSON when the version is a payload field');
  }
  if (!contract.stages.includes(VERSION_REJECTION_STAGE)) {
    problems.push(`stages must include ${VERSION_REJECTION_STAGE} (version rejections)`);
  }
  return problems;
}
