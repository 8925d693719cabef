// The security properties of the rendered deploy and teardown plans (deploy/gcloud/plan-checks.ts): each holds on
// the plans the CLI renders, and each check fails on a plan altered to break it.
import assert from 'node:assert/strict';
import { parseCli, planFor } from '../../../deploy/gcloud/cli';
import { projectGrant } from '../../../deploy/gcloud/iam';
import type { Plan } from '../../../deploy/gcloud/options';
import { assertPlanSecure, flagValue, planViolations } from '../../../deploy/gcloud/plan-checks';
import {
  type Command,
  commandsOf,
  gcloud,
  renderPlan,
  type Step,
} from '../../../deploy/gcloud/steps';

const P = 'offvia-test';
const R = 'europe-west1';
const BASE = ['--project', P, '--region', R];

/** The plan deploy.sh / teardown.sh would render for these flags. */
const render = (command: 'deploy' | 'teardown', ...flags: string[]) => {
  const args = parseCli([command, ...BASE, ...flags]);
  return { plan: planFor(args), options: args.options };
};
const commands = (plan: Plan): Command[] => plan.steps.flatMap(commandsOf);
const starts = (command: Command, ...words: string[]): boolean =>
  words.every((w, i) => command[i] === w);
const text = (plan: Plan): string => renderPlan(plan.header, plan.steps);
const run = (title: string, command: Command): Step => ({ kind: 'run', title, command });
const SA = (id: string): string => `serviceAccount:offvia-${id}@${P}.iam.gserviceaccount.com`;

describe('gcloud plan security properties', () => {
  const deploy = render('deploy');
  const wipe = render('teardown', '--delete-data');

  it('hold on the rendered deploy and teardown plans', () => {
    assert.deepEqual(planViolations(deploy.plan.steps, deploy.options), []);
    assert.deepEqual(planViolations(wipe.plan.steps, wipe.options), []);
    assert.deepEqual(planViolations(render('teardown').plan.steps, wipe.options), []);
  });

  describe("the system's own Firestore database", () => {
    it('is created by the deploy, named in every Firestore command, and given to the functions', () => {
      const create = commands(deploy.plan).filter((c) =>
        starts(c, 'gcloud', 'firestore', 'databases', 'create'),
      );
      assert.equal(create.length, 1);
      assert.equal(flagValue(create[0] ?? [], '--database'), 'offvia');
      const firestore = commands(deploy.plan).filter((c) => starts(c, 'gcloud', 'firestore'));
      assert.ok(firestore.length >= 4, 'create, type check, TTL policies');
      for (const c of firestore) assert.equal(flagValue(c, '--database'), 'offvia', c.join(' '));
      assert.doesNotMatch(text(deploy.plan), /\(default\)/);
      for (const c of commands(deploy.plan).filter((c) =>
        starts(c, 'gcloud', 'functions', 'deploy'),
      )) {
        assert.match(
          flagValue(c, '--set-env-vars') ?? '',
          /(^|[,@^])OFFVIA_FIRESTORE_DATABASE=offvia([,@]|$)/,
        );
      }
    });

    it('follows --firestore-database, and refuses (default) and an --env override', () => {
      const staging = render('deploy', '--firestore-database', 'offvia-stg');
      const names = commands(staging.plan)
        .filter((c) => starts(c, 'gcloud', 'firestore'))
        .map((c) => flagValue(c, '--database'));
      assert.ok(names.length > 0 && names.every((n) => n === 'offvia-stg'), String(names));
      assert.throws(
        () => render('deploy', '--firestore-database', '(default)'),
        /--firestore-database/,
      );
      assert.throws(
        () => render('deploy', '--env', 'OFFVIA_FIRESTORE_DATABASE=other-db'),
        /use --firestore-database/,
      );
    });

    it('is the only database the functions may use: roles/datastore.user carries an IAM condition on it', () => {
      const grants = commands(deploy.plan).filter(
        (c) =>
          starts(c, 'gcloud', 'projects', 'add-iam-policy-binding') &&
          c.includes('--role=roles/datastore.user'),
      );
      // Every function with Firestore state: ingestBooking, schemaSweep, fireWindows.
      assert.deepEqual(grants.map((c) => flagValue(c, '--member')).sort(), [
        SA('ingest'),
        SA('sweep'),
        SA('windows'),
      ]);
      for (const c of grants) {
        assert.equal(
          flagValue(c, '--condition'),
          `expression=resource.name=="projects/${P}/databases/offvia",title=offvia-firestore-offvia`,
        );
      }
      // An earlier deploy's project-wide binding is removed, not left beside the conditioned one.
      const removals = commands(deploy.plan).filter(
        (c) =>
          starts(c, 'gcloud', 'projects', 'remove-iam-policy-binding') &&
          c.includes('--role=roles/datastore.user'),
      );
      assert.equal(removals.length, grants.length);
      for (const c of removals) assert.equal(flagValue(c, '--condition'), 'None');
    });

    it('check fails on a project-wide Firestore or BigQuery data role, or a condition on another database', () => {
      for (const role of [
        'roles/datastore.user',
        'roles/bigquery.dataEditor',
        'roles/bigquery.dataViewer',
      ]) {
        const steps = [...deploy.plan.steps, run('wide', projectGrant(P, SA('ingest'), role))];
        assert.deepEqual(planViolations(steps, deploy.options), [
          `${role} to ${SA('ingest')} on the whole project`,
        ]);
      }
      const elsewhere = projectGrant(P, SA('ingest'), 'roles/datastore.user', {
        expression: `resource.name=="projects/${P}/databases/(default)"`,
        title: 'other',
      });
      assert.equal(
        planViolations([run('other db', elsewhere)], deploy.options).length,
        1,
        'a condition on (default) is not the system database',
      );
      // The generators run the same check before rendering: such a plan is never printed.
      assert.throws(
        () =>
          assertPlanSecure(
            [run('wide', projectGrant(P, SA('ingest'), 'roles/datastore.user'))],
            deploy.options,
          ),
        /roles\/datastore\.user to .* on the whole project/,
      );
    });
  });

  describe('ingress', () => {
    const deploys = (plan: Plan): Command[] =>
      commands(plan).filter((c) => starts(c, 'gcloud', 'functions', 'deploy'));

    it('deploys every function internal-only: reachable by Eventarc, Pub/Sub and Cloud Scheduler, not the internet', () => {
      assert.ok(deploys(deploy.plan).length >= 3);
      for (const c of deploys(deploy.plan)) {
        assert.equal(flagValue(c, '--ingress-settings'), 'internal-only', c[3]);
      }
      assert.match(text(deploy.plan), /--ingress-settings=internal-only/);
    });

    it('check fails on a function without ingress settings, or with ingress all', () => {
      for (const change of [
        (c: Command) => c.filter((a) => !a.startsWith('--ingress-settings')),
        (c: Command) =>
          c.map((a) => (a.startsWith('--ingress-settings') ? '--ingress-settings=all' : a)),
      ]) {
        const steps = deploy.plan.steps.map((s) =>
          s.kind === 'ensure' && s.absent && starts(s.absent, 'gcloud', 'functions', 'deploy')
            ? { ...s, absent: change(s.absent) }
            : s,
        );
        assert.equal(planViolations(steps, deploy.options).length, deploys(deploy.plan).length);
      }
    });
  });

  describe('teardown', () => {
    it('deletes Firestore documents only in the system database', () => {
      const bulk = commands(wipe.plan).filter((c) =>
        starts(c, 'gcloud', 'firestore', 'bulk-delete'),
      );
      assert.equal(bulk.length, 1);
      assert.equal(flagValue(bulk[0] ?? [], '--database'), 'offvia');
      assert.doesNotMatch(text(wipe.plan), /\(default\)/);
      const other = render('teardown', '--delete-data', '--firestore-database', 'offvia-stg');
      const otherBulk = commands(other.plan).find((c) =>
        starts(c, 'gcloud', 'firestore', 'bulk-delete'),
      );
      assert.equal(flagValue(otherBulk ?? [], '--database'), 'offvia-stg');
    });

    it('check fails on a teardown that deletes outside the system database', () => {
      const ids = '--collection-ids=windows,meta';
      for (const [what, command] of [
        [
          '(default)',
          gcloud('firestore bulk-delete', ids, '--database=(default)', `--project=${P}`),
        ],
        [
          'no --database (gcloud means (default))',
          gcloud('firestore bulk-delete', ids, `--project=${P}`),
        ],
        [
          'another database',
          gcloud('firestore bulk-delete', ids, '--database=billing', `--project=${P}`),
        ],
      ] as const) {
        const steps = [...wipe.plan.steps, run('delete', command)];
        assert.equal(planViolations(steps, wipe.options).length, 1, what);
      }
    });

    it('removes the conditioned Firestore grant and any unconditioned one of an earlier deploy', () => {
      const removals = commands(wipe.plan).filter(
        (c) =>
          starts(c, 'gcloud', 'projects', 'remove-iam-policy-binding') &&
          c.includes('--role=roles/datastore.user'),
      );
      const conditions = removals.map((c) => flagValue(c, '--condition'));
      assert.ok(conditions.includes('None'));
      assert.ok(conditions.some((c) => c?.includes('databases/offvia"')));
    });
  });
});
