// The IAM grants of a plan: the commands that make them, and the check that none is broad.
import { bq, type Command, commandsOf, flagValue, gcloud, type Step } from './steps';

/**
 * Roles no plan may grant: owner, editor, viewer, BigQuery admin anywhere; any admin role on the project unless
 * an IAM condition limits it to named resources (`conditioned`: the build account's object admin on the
 * Cloud Functions source buckets only).
 */
export function isBroadRole(role: string, projectLevel: boolean, conditioned = false): boolean {
  if (['roles/owner', 'roles/editor', 'roles/viewer', 'roles/bigquery.admin'].includes(role)) {
    return true;
  }
  return projectLevel && !conditioned && /admin/i.test(role);
}

/** An IAM condition of a project-level binding: `gcloud … --condition=expression=…,title=…` (no commas inside). */
export interface IamCondition {
  readonly expression: string;
  readonly title: string;
}

/** The `--condition` value of a binding; `None` for an unconditional one. */
export function conditionFlag(condition: IamCondition | undefined): string {
  if (condition === undefined) return '--condition=None';
  if (/,/.test(condition.expression) || /,/.test(condition.title)) {
    throw new Error(`an IAM condition for gcloud cannot hold a comma: ${condition.expression}`);
  }
  return `--condition=expression=${condition.expression},title=${condition.title}`;
}

/** A BigQuery grant on one dataset (`project:dataset`) or table (`project:dataset.table`); idempotent. */
export function bqGrant(
  project: string,
  member: string,
  role: string,
  on: 'dataset' | 'table',
  resource: string,
): string[] {
  return bq(
    project,
    'add-iam-policy-binding',
    `--${on}`,
    `--member=${member}`,
    `--role=${role}`,
    resource,
  );
}

/** A project-level grant (`condition` narrows it), or with `verb` `remove` its removal. */
export function projectGrant(
  project: string,
  member: string,
  role: string,
  condition?: IamCondition,
  verb: 'add' | 'remove' = 'add',
): string[] {
  return gcloud(
    `projects ${verb}-iam-policy-binding`,
    project,
    `--member=${member}`,
    `--role=${role}`,
    conditionFlag(condition),
    '--format=none',
  );
}

/** `who` (an entry point or account id) granted a project role as `member`, retried. */
export function projectRoleStep(
  project: string,
  who: string,
  member: string,
  { role, condition }: { role: string; condition?: IamCondition },
): Step {
  return {
    kind: 'run',
    title: `${who}: ${role} on the project${condition ? ` (${condition.title})` : ''}`,
    command: projectGrant(project, member, role, condition),
    retry: true,
  };
}

/**
 * Removes the project binding of `role` for `member` with `condition` (absent: unconditioned) when held.
 * `unconditionedOnly`: the probe finds only an unconditioned binding (one an earlier deploy made).
 */
export function removeProjectBindingStep(
  project: string,
  member: string,
  role: string,
  title: string,
  condition?: IamCondition,
  unconditionedOnly = false,
): Step {
  return {
    kind: 'ensure',
    title,
    probe: {
      kind: 'line',
      command: gcloud(
        'projects get-iam-policy',
        project,
        '--flatten=bindings[].members',
        `--filter=bindings.members=${member}${unconditionedOnly ? ' AND -bindings.condition:*' : ''}`,
        '--format=value(bindings.role)',
      ),
      line: role,
    },
    present: projectGrant(project, member, role, condition, 'remove'),
  };
}

/** roles/run.invoker on one function's Cloud Run service. */
export function invokerGrant(project: string, region: string, fn: string, email: string): string[] {
  return gcloud(
    'functions add-invoker-policy-binding',
    fn,
    `--region=${region}`,
    `--member=serviceAccount:${email}`,
    `--project=${project}`,
    '--format=none',
  );
}

/** A grant on a topic, subscription, service account or secret (`kind` is the gcloud group). */
export function resourceGrant(
  kind: 'pubsub topics' | 'pubsub subscriptions' | 'iam service-accounts' | 'secrets',
  resource: string,
  member: string,
  role: string,
  project: string,
): string[] {
  return gcloud(
    `${kind} add-iam-policy-binding`,
    resource,
    `--member=${member}`,
    `--role=${role}`,
    `--project=${project}`,
    '--format=none',
  );
}

/** One IAM grant of a plan. */
export interface Grant {
  readonly role: string;
  readonly member: string;
  /** `project`, or the dataset, topic, subscription, service account or function the grant is on. */
  readonly resource: string;
  readonly projectLevel: boolean;
  /** The binding carries an IAM condition (not `--condition=None`). */
  readonly conditioned: boolean;
  readonly command: Command;
}

/** Every IAM grant of a plan: `add-iam-policy-binding` commands and `functions add-invoker-policy-binding`. */
export function grantsOf(steps: readonly Step[]): Grant[] {
  const grants: Grant[] = [];
  for (const command of steps.flatMap(commandsOf)) {
    const member = flagValue(command, '--member') ?? '';
    const at = command.indexOf('add-iam-policy-binding');
    if (command[0] === 'gcloud' && command[2] === 'add-invoker-policy-binding') {
      grants.push({
        role: 'roles/run.invoker',
        member,
        resource: command[3] ?? '',
        projectLevel: false,
        conditioned: false,
        command,
      });
    } else if ((command[0] === 'bq' || command[0] === 'gcloud') && at >= 0) {
      // bq names the resource last; gcloud after the command words, or the project for `projects`.
      const projectLevel = command[0] === 'gcloud' && command[1] === 'projects';
      const resource =
        command[0] === 'bq' ? command.at(-1) : projectLevel ? 'project' : command[at + 1];
      const condition = flagValue(command, '--condition') ?? '';
      const conditioned = condition !== '' && condition !== 'None';
      grants.push({
        role: flagValue(command, '--role') ?? '',
        member,
        resource: resource ?? '',
        projectLevel,
        conditioned,
        command,
      });
    }
  }
  return grants;
}

/** A role that reads or writes Firestore documents or BigQuery table data. */
export function isDataRole(role: string): boolean {
  return /^roles\/datastore\./.test(role) || /^roles\/bigquery\.(data\w*|admin|user)$/.test(role);
}

/**
 * @throws Error when the steps would grant a broad role (see isBroadRole), or a Firestore or BigQuery data role
 * on the whole project without an IAM condition (it would reach every database and every dataset).
 */
export function assertNoBroadRoles(steps: readonly Step[]): void {
  for (const g of grantsOf(steps)) {
    if (isBroadRole(g.role, g.projectLevel, g.conditioned)) {
      throw new Error(`the plan would grant ${g.role} to ${g.member} on ${g.resource}`);
    }
    if (g.projectLevel && !g.conditioned && isDataRole(g.role)) {
      throw new Error(
        `the plan would grant the data role ${g.role} to ${g.member} on the whole project`,
      );
    }
  }
}
