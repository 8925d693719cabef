// The security properties of the rendered deploy and teardown plans (deploy/gcloud/plan-checks.ts): each holds on
// the plans the CLI renders, and each check fails on a plan altered to break it.
import assert from 'node:assert/strict';
import { projectGrant } from '../../../deploy/gcloud/iam';
import type { Plan } from '../../../deploy/gcloud/options';
import { assertPlanSecure, planViolations } from '../../../deploy/gcloud/plan-checks';
import {
  flagValue,
  bq,
  type Command,
  commandsOf,
  gcloud,
  renderPlan,
  type Step,
} from '../../../deploy/gcloud/steps';

import { P, PRINT_DESCRIBED, renderCli, withFakeGcloud } from '../../support/deploy-plans';

// These tests assert the booking deploy plan's exact resources (topics, accounts, grants); the plan with every
// registered pipeline is checked in gcloud-pipelines.test.ts.

const render = renderCli;
const commands = (plan: Plan): Command[] => plan.steps.flatMap(commandsOf);
const starts = (command: Command, ...words: string[]): boolean =>
  words.every((w, i) => command[i] === w);
const text = (plan: Plan): string => renderPlan(plan.header, plan.steps);
const run = (title: string, command: Command): Step => ({ kind: 'run', title, command });
const bqGrant = (
  scope: '--dataset' | '--table',
  member: string,
  role: string,
  resource: string,
): Command =>
  bq(P, 'add-iam-policy-binding', scope, `--member=${member}`, `--role=${role}`, resource);
const PUBSUB_AGENT =
  'serviceAccount:service-${PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com';
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

  describe('BigQuery grants', () => {
    const bqGrants = (plan: Plan): Command[] =>
      commands(plan).filter((c) => starts(c, 'bq') && c.includes('add-iam-policy-binding'));
    const rowWriter = `projects/${P}/roles/offvia_tableRowWriter`;
    const schemaEditor = `projects/${P}/roles/offvia_tableSchemaEditor`;

    it('give the functions custom roles on single tables, without reading rows or deleting tables', () => {
      const roles = commands(deploy.plan).filter((c) =>
        starts(c, 'gcloud', 'iam', 'roles', 'create'),
      );
      const permissions = new Map(roles.map((c) => [c[4], flagValue(c, '--permissions')]));
      assert.deepEqual(Object.fromEntries(permissions), {
        offvia_tableRowWriter: 'bigquery.tables.get,bigquery.tables.updateData',
        offvia_tableSchemaEditor:
          'bigquery.tables.get,bigquery.tables.update,bigquery.tables.updateData',
      });
      for (const p of permissions.values()) assert.doesNotMatch(p ?? '', /getData|delete/);
      const functionGrants = bqGrants(deploy.plan).filter(
        (c) => !c.includes(`--member=${SA('bronze')}`),
      );
      for (const c of functionGrants) {
        const role = flagValue(c, '--role');
        if (c.includes('--dataset'))
          assert.equal(role, 'roles/bigquery.metadataViewer', c.join(' '));
        else {
          assert.ok(c.includes('--table'), c.join(' '));
          assert.ok(role === rowWriter || role === schemaEditor, c.join(' '));
          assert.match(c.at(-1) ?? '', new RegExp(`^${P}:offvia_\\w+\\.\\w+$`));
        }
      }
      // Only the sweep may change a schema, and only of its target table (Silver).
      const schemaGrants = functionGrants.filter((c) => c.includes(`--role=${schemaEditor}`));
      assert.deepEqual(
        schemaGrants.map((c) => [flagValue(c, '--member'), c.at(-1)]),
        [[SA('sweep'), `${P}:offvia_silver.fact_bookings`]],
      );
      // Custom roles, dataset metadata grants and table grants come after the tables and before the functions.
      const firstGrant = deploy.plan.steps.findIndex((s) =>
        commandsOf(s).some((c) => c.includes('--table')),
      );
      const lastDdl = deploy.plan.steps
        .map((s) => commandsOf(s).some((c) => c.includes('query')))
        .lastIndexOf(true);
      assert.ok(lastDdl < firstGrant, 'tables exist before table grants');
    });

    it('check fails on a data role on a dataset or the project, or a predefined data role on a table', () => {
      const member = SA('ingest');
      for (const [what, command] of [
        [
          'dataEditor on a dataset',
          bqGrant('--dataset', member, 'roles/bigquery.dataEditor', `${P}:offvia_silver`),
        ],
        [
          'dataViewer on a dataset',
          bqGrant('--dataset', member, 'roles/bigquery.dataViewer', `${P}:offvia_quarantine`),
        ],
        [
          'dataEditor on a table',
          bqGrant(
            '--table',
            member,
            'roles/bigquery.dataEditor',
            `${P}:offvia_silver.fact_bookings`,
          ),
        ],
        [
          'our custom role on a dataset',
          bqGrant('--dataset', member, rowWriter, `${P}:offvia_silver`),
        ],
        ['our custom role on the project', projectGrant(P, member, rowWriter)],
        ['dataEditor on the project', projectGrant(P, member, 'roles/bigquery.dataEditor')],
      ] as const) {
        const steps = [...deploy.plan.steps, run(what, command)];
        assert.equal(planViolations(steps, deploy.options).length, 1, what);
      }
    });
  });

  describe('the Bronze subscription', () => {
    const bronze = (plan: Plan): Command[] =>
      commands(plan).filter(
        (c) =>
          starts(c, 'gcloud', 'pubsub', 'subscriptions') &&
          c[4] === 'booking-events-bronze' &&
          ['create', 'update'].includes(c[3] ?? ''),
      );

    it('writes as its own service account, granted on the Bronze table only, with a dead-letter topic of its own', () => {
      assert.deepEqual(
        bronze(deploy.plan)
          .map((c) => c[3])
          .sort(),
        ['create', 'update'],
      );
      for (const c of bronze(deploy.plan)) {
        assert.equal(
          flagValue(c, '--bigquery-service-account-email'),
          `offvia-bronze@${P}.iam.gserviceaccount.com`,
        );
        assert.equal(
          flagValue(c, '--dead-letter-topic'),
          `projects/${P}/topics/booking-events-bronze-dlq`,
        );
        assert.ok(c.includes('--write-metadata'));
      }
      const writerGrants = commands(deploy.plan).filter((c) =>
        c.some((a) => a === `--member=${SA('bronze')}`),
      );
      assert.deepEqual(
        writerGrants.map((c) => [flagValue(c, '--role'), c.at(-1)]),
        [['roles/bigquery.dataEditor', `${P}:offvia_bronze.raw_bookings`]],
      );
      // Its dead letters are kept, and the agent may forward them.
      assert.ok(
        commands(deploy.plan).some(
          (c) =>
            starts(
              c,
              'gcloud',
              'pubsub',
              'subscriptions',
              'create',
              'booking-events-bronze-dlq-hold',
            ) && flagValue(c, '--topic') === 'booking-events-bronze-dlq',
        ),
      );
    });

    it("alerts on its dead letters as on the function subscription's", () => {
      const policy = deploy.plan.files.find((f) => f.path.endsWith('policies/dead-letters.json'));
      const filters = (
        JSON.parse(policy?.content ?? '{}') as {
          conditions: { conditionThreshold: { filter: string } }[];
        }
      ).conditions.map((c) => c.conditionThreshold.filter);
      assert.ok(
        filters.some((f) => f.endsWith('resource.label.subscription_id="booking-events-dlq-hold"')),
      );
      assert.ok(
        filters.some((f) =>
          f.endsWith('resource.label.subscription_id="booking-events-bronze-dlq-hold"'),
        ),
      );
    });

    it('check fails on a Bronze subscription without its own service account or dead-letter topic', () => {
      const strip = (prefix: string) => (c: Command) => c.filter((a) => !a.startsWith(prefix));
      const swap = (prefix: string, value: string) => (c: Command) =>
        c.map((a) => (a.startsWith(prefix) ? `${prefix}=${value}` : a));
      for (const [what, change] of [
        [
          'no service account: the Pub/Sub service agent',
          strip('--bigquery-service-account-email'),
        ],
        [
          'another account',
          swap('--bigquery-service-account-email', `offvia-ingest@${P}.iam.gserviceaccount.com`),
        ],
        ['no dead-letter topic', strip('--dead-letter-topic')],
        [
          "the functions' dead-letter topic",
          swap('--dead-letter-topic', `projects/${P}/topics/booking-events-dlq`),
        ],
      ] as const) {
        const steps = deploy.plan.steps.map((s) =>
          s.kind === 'ensure' &&
          s.absent &&
          bronze({ header: [], steps: [s], files: [] }).length > 0
            ? {
                ...s,
                absent: change(s.absent),
                ...(s.present ? { present: change(s.present) } : {}),
              }
            : s,
        );
        assert.equal(planViolations(steps, deploy.options).length, 2, what);
      }
    });
  });

  describe('the producer', () => {
    it('--publisher grants roles/pubsub.publisher on the booking topic only, to each principal named', () => {
      const booking = 'serviceAccount:booking@checkout-prod.iam.gserviceaccount.com';
      const { plan } = render(
        'deploy',
        '--publisher',
        booking,
        '--publisher',
        'group:booking-ops@example.com',
      );
      const publishers = commands(plan).filter(
        (c) =>
          c.includes('--role=roles/pubsub.publisher') && !c.includes(`--member=${PUBSUB_AGENT}`),
      );
      assert.deepEqual(
        publishers.map((c) => [c.slice(1, 5).join(' '), flagValue(c, '--member')]),
        [
          ['pubsub topics add-iam-policy-binding booking-events', booking],
          ['pubsub topics add-iam-policy-binding booking-events', 'group:booking-ops@example.com'],
        ],
      );
      // Without --publisher, nobody is granted publishing, and the plan says so.
      assert.ok(
        !commands(deploy.plan).some(
          (c) =>
            c.includes('--role=roles/pubsub.publisher') && !c.includes(`--member=${PUBSUB_AGENT}`),
        ),
      );
      assert.match(text(deploy.plan), /# NOTE: no --publisher/);
    });

    it('refuses a public or malformed --publisher', () => {
      for (const bad of [
        'allUsers',
        'allAuthenticatedUsers',
        'booking@x.iam.gserviceaccount.com',
        'user:',
      ]) {
        assert.throws(() => render('deploy', '--publisher', bad), /--publisher/, bad);
      }
    });

    it('refuses a --publisher that names a set of principals or is not an email, accepts one principal://', () => {
      for (const bad of [
        // Every service account of an organization, and every user on the internet (principal sets).
        'principalSet://cloudresourcemanager.googleapis.com/organizations/123/type/ServiceAccount',
        'principalSet://goog/public:all',
        'principalSet://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/*',
        'serviceAccount:a$(id)@b.iam.gserviceaccount.com',
        "user:o'brien@example.com",
      ]) {
        assert.throws(() => render('deploy', '--publisher', bad), /--publisher/, bad);
      }
      const one =
        'principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/subject/booking';
      assert.ok(
        commands(render('deploy', '--publisher', one).plan).some((c) =>
          c.includes(`--member=${one}`),
        ),
      );
    });
  });

  describe('the push subscription of ingestBooking', () => {
    const SUB = '${INGEST_BOOKING_SUBSCRIPTION}';

    it('has an ack deadline (the push request timeout) above the function timeout, which is above one attempt', () => {
      const update = commands(deploy.plan).find((c) =>
        starts(c, 'gcloud', 'pubsub', 'subscriptions', 'update', SUB),
      );
      const fn = commands(deploy.plan).find((c) =>
        starts(c, 'gcloud', 'functions', 'deploy', 'offvia-ingest-booking'),
      );
      const ack = Number(flagValue(update ?? [], '--ack-deadline'));
      const timeout = Number(/^(\d+)s$/.exec(flagValue(fn ?? [], '--timeout') ?? '')?.[1]);
      const attemptMs = Number(
        /OFFVIA_ATTEMPT_DEADLINE_MS=(\d+)/.exec(flagValue(fn ?? [], '--set-env-vars') ?? '')?.[1] ??
          45_000,
      );
      assert.ok(
        ack <= 600 && ack > timeout && timeout * 1000 > attemptMs,
        `${ack} > ${timeout} s > ${attemptMs} ms`,
      );
      assert.throws(
        () => render('deploy', '--env', `OFFVIA_ATTEMPT_DEADLINE_MS=${timeout * 1000}`),
        /OFFVIA_ATTEMPT_DEADLINE_MS \(60000\) is not below ingestBooking's timeout/,
      );
    });

    it('reads its settings back after every run and fails the run when they differ (fake gcloud)', () => {
      const i = deploy.plan.steps.findIndex((s) =>
        commandsOf(s).some((c) => starts(c, 'gcloud', 'pubsub', 'subscriptions', 'update', SUB)),
      );
      const check = deploy.plan.steps[i + 1];
      assert.ok(
        check?.kind === 'ensure' && check.probe.kind === 'line',
        'a check right after the update',
      );
      const expected = check.probe.line;
      assert.equal(expected, `90 projects/${P}/topics/booking-events-dlq 15`);
      withFakeGcloud(PRINT_DESCRIBED, (runScript) => {
        // The capture step sets the subscription name as the real plan does; the fake gcloud answers describe.
        const capture: Step = {
          kind: 'capture',
          title: 'subscription',
          variable: 'INGEST_BOOKING_SUBSCRIPTION',
          command: ['echo', `projects/${P}/subscriptions/eventarc-x`],
        };
        const script = renderPlan([], [capture, check]);
        const status = (described: string): number | null =>
          runScript(script, { DESCRIBED: described }).status;
        assert.equal(status(expected), 0);
        // Eventarc's own defaults on a recreated subscription: no dead-letter policy, another deadline.
        assert.notEqual(status('10'), 0);
        assert.notEqual(status(`600 projects/${P}/topics/booking-events-dlq 15`), 0);
      });
    });
  });

  describe('retention', () => {
    const expirations = (plan: Plan): string[] =>
      commands(plan)
        .filter((c) => starts(c, 'bq') && /partition_expiration_days/.test(c.at(-1) ?? ''))
        .map((c) => (c.at(-1) ?? '').replace(/\s+/g, ' '));

    it('expires quarantine and bad-data partitions after --quarantine-retention-days (90 by default, 0: never)', () => {
      assert.deepEqual(expirations(deploy.plan), [
        `ALTER TABLE \`${P}.offvia_quarantine.poisoned_events\` SET OPTIONS (partition_expiration_days = 90);`,
        `ALTER TABLE \`${P}.offvia_quarantine.bad_data\` SET OPTIONS (partition_expiration_days = 90);`,
      ]);
      assert.ok(
        expirations(render('deploy', '--quarantine-retention-days', '30').plan).every((s) =>
          s.includes('= 30)'),
        ),
      );
      assert.ok(
        expirations(render('deploy', '--quarantine-retention-days', '0').plan).every((s) =>
          s.includes('= NULL)'),
        ),
      );
      // After the sql/ files that create the tables.
      const lastSqlFile = deploy.plan.steps
        .map((s) => s.title.startsWith('BigQuery DDL sql/'))
        .lastIndexOf(true);
      const firstExpiry = deploy.plan.steps.findIndex((s) =>
        s.title.startsWith('Partition expiration'),
      );
      assert.ok(lastSqlFile < firstExpiry);
      assert.ok(
        !expirations(deploy.plan).some((s) => s.includes('offvia_bronze')),
        'Bronze partitions never expire: it is the replay source',
      );
      // sql/010 partitions a new Bronze by publish time; an older, unpartitioned one is reported, not recreated.
      const ddl = deploy.plan.steps.find((s) => s.title.startsWith('BigQuery DDL sql/010'));
      assert.ok(ddl?.kind === 'run');
      assert.match(ddl.command.join(' '), /PARTITION BY DATE\(publish_time\)/);
      const check = deploy.plan.steps.findIndex((s) =>
        s.title.includes('is partitioned on publish_time'),
      );
      assert.ok(check > lastSqlFile, 'the Bronze partitioning check runs after sql/');
      const step = deploy.plan.steps[check];
      assert.ok(
        step?.kind === 'ensure' && step.probe.command.join(' ').includes('"field":"publish_time"'),
      );
      assert.ok(
        step.absent?.join(' ').includes('warning:') && !step.absent.join(' ').includes('exit 1'),
      );
      for (const bad of ['-1', 'soon', '1.5']) {
        assert.throws(
          () => render('deploy', '--quarantine-retention-days', bad),
          /--quarantine-retention-days/,
        );
      }
    });

    it('retains booking-topic messages for seek and replay (--topic-retention, 7d by default), on create and on update', () => {
      const topic = commands(deploy.plan).filter(
        (c) =>
          starts(c, 'gcloud', 'pubsub', 'topics') &&
          c[4] === 'booking-events' &&
          ['create', 'update'].includes(c[3] ?? ''),
      );
      assert.deepEqual(
        topic.map((c) => [c[3], flagValue(c, '--message-retention-duration')]).sort(),
        [
          ['create', '7d'],
          ['update', '7d'],
        ],
      );
      const day = render('deploy', '--topic-retention', '8d');
      assert.ok(
        commands(day.plan).some((c) => flagValue(c, '--message-retention-duration') === '8d'),
      );
      // A replay must find its dedup ledger entry: the ledger (8 days by default) must outlive the retention.
      assert.throws(
        () => render('deploy', '--topic-retention', '9d'),
        /OFFVIA_WINDOW_LEDGER_TTL_MS .* --topic-retention \(9d\)/,
      );
      const longer = render(
        'deploy',
        '--topic-retention',
        '31d',
        '--env',
        `OFFVIA_WINDOW_LEDGER_TTL_MS=${32 * 86_400_000}`,
      );
      assert.ok(
        commands(longer.plan).some((c) => flagValue(c, '--message-retention-duration') === '31d'),
      );
      for (const bad of ['5m', '32d', '7', 'week']) {
        assert.throws(() => render('deploy', '--topic-retention', bad), /--topic-retention/, bad);
      }
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
