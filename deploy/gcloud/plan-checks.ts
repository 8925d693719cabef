// Security properties every rendered plan must have, checked on its commands: the deploy and teardown plans run
// them before rendering (a violation stops the plan), and the tests run them on plans altered to break each one.
import { INGRESS_SETTINGS } from './functions';
import { grantsOf, isDataRole } from './iam';
import type { DeployOptions } from './options';
import { type Command, commandsOf, type Step } from './steps';

/** The value of `--flag=value` in a command, or undefined. */
export function flagValue(command: Command, flag: string): string | undefined {
  return command.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
}

const starts = (command: Command, ...words: string[]): boolean =>
  words.every((w, i) => command[i] === w);

/**
 * Data roles granted wider than the system's own resources: a Firestore or BigQuery data role on the whole
 * project without an IAM condition (it reaches every database and dataset of the project), and a Firestore role
 * whose condition names another database than the system's.
 */
function dataRoleViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  const database = `resource.name=="projects/${o.project}/databases/${o.firestoreDatabase}"`;
  for (const g of grantsOf(steps)) {
    if (!isDataRole(g.role) || !g.projectLevel) continue;
    if (!g.conditioned) {
      out.push(`${g.role} to ${g.member} on the whole project`);
    } else if (/^roles\/datastore\./.test(g.role)) {
      const condition = flagValue(g.command, '--condition') ?? '';
      if (!condition.startsWith(`expression=${database},`)) {
        out.push(
          `${g.role} to ${g.member} with a condition other than database ${o.firestoreDatabase}`,
        );
      }
    }
  }
  return out;
}

/** Firestore commands that name a database other than the system's (or none: gcloud then means `(default)`). */
function firestoreDatabaseViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  for (const command of steps.flatMap(commandsOf)) {
    if (!starts(command, 'gcloud', 'firestore')) continue;
    const database = flagValue(command, '--database');
    if (database !== o.firestoreDatabase) {
      out.push(
        `${command.slice(0, 4).join(' ')} on database ${database ?? '(default)'}, not ${o.firestoreDatabase}`,
      );
    }
  }
  return out;
}

/** Function deploys without `--ingress-settings=internal-only` (gcloud's default is `all`: the internet). */
function ingressViolations(steps: readonly Step[]): string[] {
  return steps
    .flatMap(commandsOf)
    .filter((c) => starts(c, 'gcloud', 'functions', 'deploy'))
    .filter((c) => flagValue(c, '--ingress-settings') !== INGRESS_SETTINGS)
    .map(
      (c) =>
        `function ${c[3]} deployed with ingress ${flagValue(c, '--ingress-settings') ?? 'all (unset)'}`,
    );
}

/** Every violation of the security properties in a deploy or teardown plan's steps; empty when there is none. */
export function planViolations(steps: readonly Step[], o: DeployOptions): string[] {
  return [
    ...dataRoleViolations(steps, o),
    ...firestoreDatabaseViolations(steps, o),
    ...ingressViolations(steps),
  ];
}

/** @throws Error listing the violations of planViolations, when there are any. */
export function assertPlanSecure(steps: readonly Step[], o: DeployOptions): void {
  const violations = planViolations(steps, o);
  if (violations.length > 0) {
    throw new Error(`the plan violates its security properties:\n  ${violations.join('\n  ')}`);
  }
}
