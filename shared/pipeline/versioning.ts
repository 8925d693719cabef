// Versioned contracts: read the version a message names, refuse unknown and retired versions at SCHEMA_VALIDATION,
// and decode the rest with their own version's mapping (the lab: "version the event contracts").
import type {
  ContractMessage,
  ContractOutcome,
  ContractVersion,
  DecodeContext,
  PipelineContract,
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

function decodable<S, R, E>(contract: PipelineContract<S, R, E>): string {
  return contract.versions
    .filter((v) => v.status !== 'retired')
    .map((v) => v.version)
    .join(', ');
}

/**
 * Decodes one message with the contract version it names (`contract.versionFrom`): an absent attribute means
 * `whenAbsent`; an unknown version, a retired one, or an absent one where the attribute is required, is rejected
 * at SCHEMA_VALIDATION with a reason naming the version and the versions accepted. The outcome carries the version
 * it was decoded as (`null` when none applied). Pure; never throws for bad data.
 */
export function decodeVersioned<S, R, E>(
  contract: PipelineContract<S, R, E>,
  message: ContractMessage,
  context: DecodeContext<S>,
): ContractOutcome<R, E> {
  const named = message.attributes[contract.versionFrom.name];
  const version = named === undefined || named === '' ? contract.versionFrom.whenAbsent : named;
  if (version === null) {
    return rejectVersion(
      null,
      `missing contract version: attribute ${contract.versionFrom.name} is required (accepted: ${decodable(contract)})`,
    );
  }
  const spec: ContractVersion<S, R, E> | undefined = contract.versions.find(
    (v) => v.version === version,
  );
  if (spec === undefined) {
    return rejectVersion(
      null,
      `unknown contract version ${quote(version)} (accepted: ${decodable(contract)})`,
    );
  }
  if (spec.status === 'retired') {
    return rejectVersion(
      version,
      `contract version ${quote(version)} is retired (accepted: ${decodable(contract)})`,
    );
  }
  return { ...spec.decode(message, context), version };
}

function rejectVersion<R, E>(version: string | null, reason: string): ContractOutcome<R, E> {
  return { ok: false, stage: VERSION_REJECTION_STAGE, reason, context: {}, version };
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
  if (!contract.stages.includes(VERSION_REJECTION_STAGE)) {
    problems.push(`stages must include ${VERSION_REJECTION_STAGE} (version rejections)`);
  }
  return problems;
}
