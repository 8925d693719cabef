// The deploy plan (deploy/gcloud/plan.ts) as data: every resource with its key flags, least privilege, order,
// idempotence, and determinism. Nothing here calls Google Cloud; the plan is built from the repository.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SCHEDULES } from '../../../deploy/schedules';
import { parseCli, REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import { FUNCTION_SPECS } from '../../../deploy/gcloud/functions';
import { buildDeployPlan, DEFAULT_TTL_COLLECTION_GROUPS } from '../../../deploy/gcloud/deploy-plan';
import { grantsOf, isBroadRole } from '../../../deploy/gcloud/iam';
import type { DeployOptions, Plan, RepoFacts } from '../../../deploy/gcloud/options';
import { buildTeardownPlan } from '../../../deploy/gcloud/teardown-plan';
import { type LogEntry, Logger } from '../../../shared/logging/logger';
import * as logs from '../../../shared/logging/logs';
import { datasetsCreated } from '../../../deploy/gcloud/sql';
import { renderPlan, commandsOf, type Command, type Step } from '../../../deploy/gcloud/steps';
import { PIPELINES } from '../../../shared/pipelines';

import { OPTIONS as TEST_OPTIONS, P, withFakeGcloud } from '../../support/deploy-plans';

const R = TEST_OPTIONS.region;
const OPTIONS: DeployOptions = {
  ...TEST_OPTIONS,
  notificationChannels: [`projects/${P}/notificationChannels/123`],
};
const email = (id: string): string => `offvia-${id}@${P}.iam.gserviceaccount.com`;
const SA = (id: string): string => `serviceAccount:${email(id)}`;
const PUBSUB_AGENT =
  'serviceAccount:service-${PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com';

/** The repository as it is today. */
function repoFacts(): RepoFacts {
  return readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation);
}

/** Booking's DDL files without the gold dataset and tables (as before windowing). */
function bookingSqlWithoutGold(): RepoFacts['pipelineSqlFiles'] {
  const base = repoFacts();
  const noGold = /CREATE\s+SCHEMA\s+IF\s+NOT\s+EXISTS\s+`[^`]*\.offvia_gold`[^;]*;/g;
  return {
    ...base.pipelineSqlFiles,
    booking: (base.pipelineSqlFiles.booking ?? [])
      .filter((f) => !f.sql.includes('.offvia_gold.'))
      .map((f) => ({ ...f, sql: f.sql.replace(noGold, '') })),
  };
}

const allCommands = (plan: Plan): Command[] => plan.steps.flatMap(commandsOf);
const has = (command: Command, ...args: string[]): boolean =>
  args.every((a) => command.includes(a));
const starts = (command: Command, ...words: string[]): boolean =>
  words.every((w, i) => command[i] === w);

/** The one command starting with `words` and holding `args`; fails when there are none or several. */
function only(plan: Plan, words: string, ...args: string[]): Command {
  const found = allCommands(plan).filter((c) => starts(c, ...words.split(' ')) && has(c, ...args));
  assert.equal(found.length, 1, `expected one "${words} ${args.join(' ')}", found ${found.length}`);
  return found[0] ?? [];
}

/** Index of the first step with a command starting with `words` and holding `args`. */
function stepIndex(plan: Plan, words: string, ...args: string[]): number {
  const i = plan.steps.findIndex((s) =>
    commandsOf(s).some((c) => starts(c, ...words.split(' ')) && has(c, ...args)),
  );
  assert.notEqual(i, -1, `no step runs "${words} ${args.join(' ')}"`);
  return i;
}

const flag = (command: Command, name: string): string | undefined =>
  command.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);

describe('gcloud deploy plan', () => {
  const plan = buildDeployPlan(OPTIONS, repoFacts());
  const full = buildDeployPlan(OPTIONS, repoFacts());

  describe('resources and their key flags', () => {
    it('enables the APIs, then runs every sql/ file in name order with project and location filled in', () => {
      const enable = only(plan, 'gcloud services enable');
      for (const api of [
        'cloudfunctions',
        'run',
        'eventarc',
        'pubsub',
        'bigquery',
        'firestore',
        'cloudscheduler',
        'monitoring',
      ]) {
        assert.ok(enable.includes(`${api}.googleapis.com`), api);
      }
      // The sql/ files; the partition expirations that follow them are checked in gcloud-security.test.ts.
      const queries = allCommands(plan).filter(
        (c) =>
          starts(c, 'bq') &&
          c.includes('query') &&
          !/partition_expiration_days/.test(c.at(-1) ?? ''),
      );
      const files = readFileSync(path.join(REPO_ROOT, 'sql', '000_datasets.sql'), 'utf8');
      assert.ok(files.includes('{{project}}'), "files.includes('{{project}}')");
      assert.equal(queries.length, (repoFacts().pipelineSqlFiles.booking ?? []).length);
      for (const q of queries) {
        assert.ok(
          has(q, `--project_id=${P}`, '--location=EU', '--use_legacy_sql=false'),
          "has(q, `--project_id=${P}`, '--location=EU', '--use_legacy_sql=false')",
        );
        const sql = q[q.length - 1] ?? '';
        assert.ok(!sql.includes('{{'), 'placeholders filled');
      }
      assert.match(
        queries[0]?.at(-1) ?? '',
        /CREATE SCHEMA IF NOT EXISTS `offvia-test\.offvia_bronze`/,
      );
      assert.match(queries[0]?.at(-1) ?? '', /location = 'EU'/);
      const silver = queries.find((q) => /fact_bookings` \(/.test(q.at(-1) ?? ''))?.at(-1) ?? '';
      assert.match(
        silver,
        /PARTITION BY DATE\(event_timestamp\)\s+CLUSTER BY origin_airport, destination_airport/,
      );
    });

    it('creates the topic, the dead-letter topic, the dead-letter hold subscription and Bronze with --write-metadata', () => {
      only(plan, 'gcloud pubsub topics create booking-events');
      only(plan, 'gcloud pubsub topics create booking-events-dlq');
      const hold = only(plan, 'gcloud pubsub subscriptions create booking-events-dlq-hold');
      assert.ok(
        has(hold, '--topic=booking-events-dlq', '--expiration-period=never'),
        "has(hold, '--topic=booking-events-dlq', '--expiration-period=never')",
      );
      const bronze = only(plan, 'gcloud pubsub subscriptions create booking-events-bronze');
      assert.ok(
        has(
          bronze,
          '--topic=booking-events',
          `--bigquery-table=${P}.offvia_bronze.raw_bookings`,
          '--write-metadata',
        ),
        "has( bronze, '--topic=booking-events', `--bigquery-table=${P}.offvia_bronze.raw_",
      );
      const grant = only(plan, 'bq', 'add-iam-policy-binding', `${P}:offvia_bronze.raw_bookings`);
      assert.ok(
        has(grant, '--table', `--member=${SA('bronze')}`, '--role=roles/bigquery.dataEditor'),
        'the Bronze writer account, on the Bronze table only',
      );
      assert.ok(
        stepIndex(plan, 'bq', 'add-iam-policy-binding', `${P}:offvia_bronze.raw_bookings`) <
          stepIndex(plan, 'gcloud pubsub subscriptions create booking-events-bronze'),
        'the writer can write before the subscription is created',
      );
    });

    it('deploys ingestBooking gen2 from source with --trigger-topic, --retry, its own identity and sizing', () => {
      const deploy = only(plan, 'gcloud functions deploy offvia-ingest-booking');
      assert.ok(
        has(
          deploy,
          '--gen2',
          '--runtime=nodejs22',
          '--source=.',
          '--entry-point=ingestBooking',
          '--trigger-topic=booking-events',
          '--retry',
          `--trigger-service-account=${email('trigger')}`,
          '--no-allow-unauthenticated',
          `--service-account=${email('ingest')}`,
          `--region=${R}`,
        ),
        'ingestBooking deploy flags (gen2, nodejs22, topic trigger with --retry, identity)',
      );
      for (const f of [
        '--memory',
        '--cpu',
        '--concurrency',
        '--max-instances',
        '--min-instances',
        '--timeout',
      ]) {
        assert.ok(flag(deploy, f) !== undefined, f);
      }
      const env = flag(deploy, '--set-env-vars') ?? '';
      assert.match(env, new RegExp(`OFFVIA_PROJECT_ID=${P}`));
      assert.match(env, /OFFVIA_SILVER_TABLE=offvia_silver\.fact_bookings/);
      assert.match(env, /OFFVIA_SCHEMA_WINDOW_MINUTES=3/);
    });

    it("deploys booking's functions from its definition, and no other", () => {
      // The plan covers booking alone (no --pipeline).
      const booking = PIPELINES.find((p) => p.name === 'booking');
      assert.ok(booking);
      const deployed = allCommands(plan)
        .filter((c) => starts(c, 'gcloud', 'functions', 'deploy'))
        .map((c) => flag(c, '--entry-point'));
      assert.deepEqual(deployed, [
        booking.functions.ingest.entryPoint,
        booking.functions.schemaSweep?.entryPoint,
        booking.functions.fireWindows.entryPoint,
      ]);
      assert.ok(deployed.includes('ingestBooking'), "deployed.includes('ingestBooking')");
    });

    it('gives every function cpu >= 1 when its concurrency is above 1 (gen2 rule)', () => {
      for (const c of allCommands(full).filter((c) => starts(c, 'gcloud', 'functions', 'deploy'))) {
        const concurrency = Number(flag(c, '--concurrency'));
        if (concurrency > 1) assert.ok(Number(flag(c, '--cpu')) >= 1, c[3]);
        assert.match(flag(c, '--timeout') ?? '', /^\d+s$/);
      }
    });

    it('sets the dead-letter topic and retry policy on the Eventarc subscription, with the agent roles Google documents', () => {
      const update = only(
        plan,
        'gcloud pubsub subscriptions update ${INGEST_BOOKING_SUBSCRIPTION}',
      );
      assert.ok(
        has(update, `--dead-letter-topic=projects/${P}/topics/booking-events-dlq`),
        'has(update, `--dead-letter-topic=projects/${P}/topics/booking-events-dlq`)',
      );
      assert.ok(
        Number(flag(update, '--max-delivery-attempts')) >= 5,
        "Number(flag(update, '--max-delivery-attempts')) >= 5",
      );
      assert.equal(flag(update, '--min-retry-delay'), '10s');
      assert.equal(flag(update, '--max-retry-delay'), '600s');
      const publisher = only(
        plan,
        'gcloud pubsub topics add-iam-policy-binding booking-events-dlq',
      );
      assert.ok(
        has(publisher, `--member=${PUBSUB_AGENT}`, '--role=roles/pubsub.publisher'),
        "has(publisher, `--member=${PUBSUB_AGENT}`, '--role=roles/pubsub.publisher')",
      );
      const subscriber = only(
        plan,
        'gcloud pubsub subscriptions add-iam-policy-binding ${INGEST_BOOKING_SUBSCRIPTION}',
      );
      assert.ok(
        has(subscriber, `--member=${PUBSUB_AGENT}`, '--role=roles/pubsub.subscriber'),
        "has(subscriber, `--member=${PUBSUB_AGENT}`, '--role=roles/pubsub.subscriber')",
      );
      const deploy = stepIndex(plan, 'gcloud functions deploy offvia-ingest-booking');
      const capture = stepIndex(plan, 'gcloud eventarc triggers describe');
      assert.ok(
        deploy < capture &&
          capture <
            stepIndex(plan, 'gcloud pubsub subscriptions update ${INGEST_BOOKING_SUBSCRIPTION}'),
        'the deploy, then the trigger capture, then the subscription update',
      );
    });

    it('deploys the HTTP functions private, each called by a Cloud Scheduler job with an OIDC token', () => {
      for (const [entryPoint, name] of [
        ['schemaSweep', 'offvia-schema-sweep'],
        ['fireWindows', 'offvia-fire-windows'],
      ] as const) {
        const deploy = only(full, `gcloud functions deploy ${name}`);
        assert.ok(
          has(
            deploy,
            '--trigger-http',
            '--no-allow-unauthenticated',
            `--entry-point=${entryPoint}`,
          ),
          "has( deploy, '--trigger-http', '--no-allow-unauthenticated', `--entry-point=${en",
        );
        assert.ok(
          !deploy.includes('--allow-unauthenticated'),
          "!deploy.includes('--allow-unauthenticated')",
        );
        const schedule = SCHEDULES.find((s) => s.functionName === entryPoint);
        for (const verb of ['create', 'update']) {
          const job = only(full, `gcloud scheduler jobs ${verb} http ${name}`);
          const url = `\${${entryPoint.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}_URL}`;
          assert.ok(
            has(
              job,
              `--schedule=${schedule?.cron}`,
              `--oidc-service-account-email=${email('scheduler')}`,
              `--uri=${url}`,
              `--oidc-token-audience=${url}`,
              '--http-method=POST',
              `--location=${R}`,
            ),
            'has( job, `--schedule=${schedule?.cron}`, `--oidc-service-account-email=${email(',
          );
        }
        const invoker = only(full, `gcloud functions add-invoker-policy-binding ${name}`);
        assert.ok(
          has(invoker, `--member=${SA('scheduler')}`),
          "has(invoker, `--member=${SA('scheduler')}`)",
        );
      }
      const windows = full.steps.find((s) =>
        s.title.startsWith('Cloud Scheduler job offvia-fire-windows'),
      );
      assert.ok(windows?.title.includes('* * * * *'), 'fireWindows every minute');
      assert.equal(SCHEDULES.find((s) => s.functionName === 'schemaSweep')?.cron, '* * * * *');
    });

    it("sizes fireWindows' timeout and Scheduler deadline for its timer loop and lease, and refuses a loop as long as the schedule", () => {
      const deploy = only(full, 'gcloud functions deploy offvia-fire-windows');
      // 58 s of loop + 120 s of lease + 30 s margin (deploy/gcloud/fire-windows-timeout.ts).
      assert.equal(flag(deploy, '--timeout'), '208s');
      const job = only(full, 'gcloud scheduler jobs create http offvia-fire-windows');
      assert.equal(flag(job, '--attempt-deadline'), '238s');
      const ingest = only(full, 'gcloud functions deploy offvia-ingest-booking');
      assert.equal(flag(ingest, '--timeout'), '60s');
      assert.throws(
        () =>
          buildDeployPlan(
            { ...OPTIONS, envOverrides: { OFFVIA_FIRE_WINDOWS_LOOP_MS: '60000' } },
            repoFacts(),
          ),
        /OFFVIA_FIRE_WINDOWS_LOOP_MS \(60000\) is not below the fireWindows schedule/,
      );
      // The longest lease: the timeout follows it; Cloud Scheduler's deadline stops at its 30-minute maximum.
      const long = buildDeployPlan(
        { ...OPTIONS, envOverrides: { OFFVIA_FIRE_WINDOWS_LEASE_MS: '1800000' } },
        repoFacts(),
      );
      assert.equal(
        flag(only(long, 'gcloud functions deploy offvia-fire-windows'), '--timeout'),
        '1888s',
      );
      assert.equal(
        flag(
          only(long, 'gcloud scheduler jobs create http offvia-fire-windows'),
          '--attempt-deadline',
        ),
        '1800s',
      );
    });

    it('sets the Firestore TTL policies of the window store (dedup ledger, dropped-late counters, watermark holds) after the database', () => {
      assert.deepEqual(DEFAULT_TTL_COLLECTION_GROUPS, [
        'eventLedger',
        'droppedLate',
        'watermarkHolds',
      ]);
      for (const group of DEFAULT_TTL_COLLECTION_GROUPS) {
        const ttl = only(
          plan,
          'gcloud firestore fields ttls update expireAt',
          `--collection-group=${group}`,
        );
        assert.ok(
          has(ttl, '--enable-ttl', '--database=offvia'),
          "has(ttl, '--enable-ttl', '--database=offvia')",
        );
      }
      const create = only(plan, 'gcloud firestore databases create');
      assert.ok(
        has(create, '--location=eur3', '--type=firestore-native'),
        "has(create, '--location=eur3', '--type=firestore-native')",
      );
      assert.ok(
        stepIndex(plan, 'gcloud firestore databases create') <
          stepIndex(plan, 'gcloud firestore fields ttls update'),
        "stepIndex(plan, 'gcloud firestore databases create') < stepIndex(plan",
      );
    });

    it('refuses a dedup ledger TTL shorter than the retention of the function subscription', () => {
      assert.throws(
        () =>
          buildDeployPlan(
            { ...OPTIONS, envOverrides: { OFFVIA_WINDOW_LEDGER_TTL_MS: String(86_400_000) } },
            repoFacts(),
          ),
        /OFFVIA_WINDOW_LEDGER_TTL_MS \(86400000\) is shorter than .* retention \(7d\)/,
      );
    });

    it('creates the log-based metrics and the alert policies from generated JSON files', () => {
      const file = (suffix: string): Record<string, unknown> => {
        const f = plan.files.find((x) => x.path.endsWith(suffix));
        assert.ok(f, suffix);
        return JSON.parse(f.content) as Record<string, unknown>;
      };
      const quarantine = file('metrics/offvia-quarantined-messages.json');
      assert.match(String(quarantine.filter), /jsonPayload\.outcome="quarantine"/);
      assert.deepEqual(quarantine.labelExtractors, {
        error_stage: 'EXTRACT(jsonPayload.error_stage)',
      });
      // One line per bad-data row: the announcements of a row whose badDataWritten follows are left out.
      const badData = String(file('metrics/offvia-bad-data-rows.json').filter);
      assert.match(badData, /jsonPayload\.outcome="bad_data" AND NOT \(/);
      assert.match(badData, /"row rejected by BigQuery, routed to bad data"/);
      assert.match(badData, /"drift row too large for the retry store, routed to bad data"/);
      assert.doesNotMatch(badData, /row written to bad-data table|pane row refused/);
      assert.equal(
        file('metrics/offvia-watermark-lag.json').valueExtractor,
        'EXTRACT(jsonPayload.watermark_lag_ms)',
      );
      const policies = plan.files
        .filter((f) => f.path.includes('/policies/'))
        .map((f) => f.content);
      const text = policies.join('\n');
      for (const needle of [
        'logging.googleapis.com/user/offvia-quarantined-messages',
        'metric.label.error_stage',
        'pubsub.googleapis.com/subscription/oldest_unacked_message_age',
        'run.googleapis.com/request_count',
        'response_code_class=\\"5xx\\"',
        'logging.googleapis.com/user/offvia-bad-data-rows',
        'logging.googleapis.com/user/offvia-watermark-lag',
        `projects/${P}/notificationChannels/123`,
      ]) {
        assert.ok(text.includes(needle), needle);
      }
      for (const f of plan.files.filter((x) => x.path.includes('/policies/'))) {
        const create = only(
          plan,
          'gcloud alpha monitoring policies create',
          `--policy-from-file=${f.path}`,
        );
        assert.ok(create.includes(`--project=${P}`), 'create.includes(`--project=${P}`)');
      }
      for (const f of plan.files.filter((x) => x.path.includes('/metrics/'))) {
        only(plan, 'gcloud logging metrics create', `--config-from-file=${f.path}`);
      }
      assert.ok(
        stepIndex(plan, 'gcloud logging metrics create') <
          stepIndex(plan, 'gcloud alpha monitoring policies create'),
        'the log-based metrics are created before the policies that read them',
      );
    });

    it('measures watermark lag on every completed fireWindows run, alerts when runs stop, and on scheduler failures', () => {
      const file = (p: Plan, suffix: string): Record<string, unknown> | undefined => {
        const f = p.files.find((x) => x.path.endsWith(suffix));
        return f === undefined ? undefined : (JSON.parse(f.content) as Record<string, unknown>);
      };
      // The lag comes from the run summary, logged on every run, not only when the watermark is written.
      const entries: LogEntry[] = [];
      const logger = new Logger(
        't',
        (e) => entries.push(e),
        () => 0,
      );
      logs.fireWindowsDone(logger, {
        processingTimeMs: 900_000,
        watermarkMs: 60_000,
        watermarkAdvanced: false,
      });
      logs.fireWindowsDone(logger, { processingTimeMs: 900_000, watermarkMs: null });
      assert.equal(entries[0]?.watermark_lag_ms, 840_000);
      assert.ok(!('watermark_lag_ms' in (entries[1] ?? {})), 'no lag before the first event');
      const lag = String(file(full, 'metrics/offvia-watermark-lag.json')?.filter);
      assert.ok(lag.includes(`jsonPayload.message="${entries[0]?.message}"`), lag);
      assert.match(lag, /jsonPayload\.outcome="fire_windows"/);
      assert.match(lag, /jsonPayload\.watermark_lag_ms:\*/);
      const runs = file(full, 'metrics/offvia-fire-windows-runs.json');
      assert.ok(String(runs?.filter).includes(`jsonPayload.message="${entries[0]?.message}"`));
      const absent = file(full, 'policies/fire-windows-absent.json') as
        { conditions: { conditionAbsent?: { filter: string; duration: string } }[] } | undefined;
      const condition = absent?.conditions[0]?.conditionAbsent;
      assert.ok(condition, 'an absence condition on fireWindows runs');
      assert.match(condition.filter, /logging\.googleapis\.com\/user\/offvia-fire-windows-runs/);
      assert.equal(condition.duration, '600s');
      // Cloud Scheduler failures (401/403 from a bad OIDC token, 5xx) of both jobs, as a metric with an alert.
      const scheduler = String(file(full, 'metrics/offvia-scheduler-job-errors.json')?.filter);
      assert.match(scheduler, /resource\.type="cloud_scheduler_job"/);
      assert.match(scheduler, /severity>=ERROR/);
      for (const job of ['offvia-schema-sweep', 'offvia-fire-windows']) {
        assert.ok(scheduler.includes(`resource.labels.job_id="${job}"`), job);
      }
      const schedulerPolicy = full.files.find((f) =>
        f.path.endsWith('policies/scheduler-job-errors.json'),
      );
      assert.ok(schedulerPolicy, 'a scheduler-job-errors policy');
      assert.ok(
        schedulerPolicy.content.includes('logging.googleapis.com/user/offvia-scheduler-job-errors'),
      );
      assert.ok(schedulerPolicy.content.includes('resource.type=\\"cloud_scheduler_job\\"'));
      assert.ok(
        String(file(plan, 'metrics/offvia-scheduler-job-errors.json')?.filter).includes(
          'offvia-schema-sweep',
        ),
      );
    });

    it('grants fireWindows and ingestBooking the gold dataset', () => {
      const goldGrants = (p: Plan, id: string): Command[] =>
        allCommands(p).filter(
          (c) => c.includes(`${P}:offvia_gold`) && c.includes(`--member=${SA(id)}`),
        );
      for (const id of ['ingest', 'windows']) assert.equal(goldGrants(full, id).length, 1, id);
    });
  });

  describe('least privilege', () => {
    /** member → sorted "role on resource" of every grant. */
    function grantTable(p: Plan): Map<string, string[]> {
      const table = new Map<string, string[]>();
      for (const g of grantsOf(p.steps)) {
        table.set(g.member, [...(table.get(g.member) ?? []), `${g.role} on ${g.resource}`].sort());
      }
      return table;
    }

    it('grants no broad role: no owner/editor/viewer, no BigQuery admin, no *admin on the project', () => {
      for (const p of [plan, full]) {
        const grants = grantsOf(p.steps);
        assert.ok(grants.length > 10, 'grants.length > 10');
        for (const g of grants) {
          assert.ok(
            !isBroadRole(g.role, g.projectLevel, g.conditioned),
            `${g.role} to ${g.member}`,
          );
          // The one admin role: the build account's object admin, limited to the functions' source buckets.
          if (/admin/i.test(g.role)) {
            assert.equal(g.role, 'roles/storage.objectAdmin');
            assert.equal(g.member, SA('build'));
            assert.match(
              flag(g.command, '--condition') ?? '',
              /^expression=resource\.name\.startsWith\("projects\/_\/buckets\/gcf-v2-sources-"\) \|\| resource\.name\.startsWith\("projects\/_\/buckets\/gcf-v2-uploads-"\),title=/,
            );
          }
          assert.ok(
            !['allUsers', 'allAuthenticatedUsers'].includes(g.member),
            "!['allUsers', 'allAuthenticatedUsers'].includes(g.member)",
          );
        }
      }
      assert.ok(
        isBroadRole('roles/editor', false) && isBroadRole('roles/bigquery.admin', false),
        "isBroadRole('roles/editor', false) && isBroadRole('roles/bigquery.admin', false)",
      );
      assert.ok(
        isBroadRole('roles/pubsub.admin', true) && !isBroadRole('roles/datastore.user', true),
        "isBroadRole('roles/pubsub.admin', true) && !isBroadRole('roles/datastore.user', ",
      );
      assert.ok(isBroadRole('roles/storage.objectAdmin', true), 'unconditioned object admin');
      assert.ok(isBroadRole('roles/editor', true, true), 'a condition does not make editor narrow');
    });

    it('gives each identity exactly the roles it needs, at dataset or resource level where IAM allows', () => {
      const table = grantTable(full);
      const rows = `projects/${P}/roles/offvia_tableRowWriter`;
      const schema = `projects/${P}/roles/offvia_tableSchemaEditor`;
      assert.deepEqual(table.get(SA('ingest')), [
        `${rows} on ${P}:offvia_gold.route_panes`,
        `${rows} on ${P}:offvia_quarantine.bad_data`,
        `${rows} on ${P}:offvia_quarantine.poisoned_events`,
        `${rows} on ${P}:offvia_silver.fact_bookings`,
        `roles/bigquery.metadataViewer on ${P}:offvia_gold`,
        `roles/bigquery.metadataViewer on ${P}:offvia_quarantine`,
        `roles/bigquery.metadataViewer on ${P}:offvia_silver`,
        'roles/datastore.user on project',
      ]);
      // The sweep is the only one that runs query jobs (ALTER TABLE … ADD COLUMN): jobs.create is project-only.
      assert.deepEqual(table.get(SA('sweep')), [
        `${rows} on ${P}:offvia_quarantine.bad_data`,
        `${schema} on ${P}:offvia_silver.fact_bookings`,
        `roles/bigquery.jobUser on project`,
        `roles/bigquery.metadataViewer on ${P}:offvia_quarantine`,
        `roles/bigquery.metadataViewer on ${P}:offvia_silver`,
        'roles/datastore.user on project',
      ]);
      assert.deepEqual(table.get(SA('windows')), [
        `${rows} on ${P}:offvia_gold.route_panes`,
        `${rows} on ${P}:offvia_quarantine.bad_data`,
        `roles/bigquery.metadataViewer on ${P}:offvia_gold`,
        `roles/bigquery.metadataViewer on ${P}:offvia_quarantine`,
        'roles/datastore.user on project',
      ]);
      assert.deepEqual(table.get(SA('scheduler')), [
        'roles/run.invoker on offvia-fire-windows',
        'roles/run.invoker on offvia-schema-sweep',
      ]);
      assert.deepEqual(table.get(SA('trigger')), ['roles/run.invoker on offvia-ingest-booking']);
      assert.deepEqual(table.get(PUBSUB_AGENT), [
        'roles/iam.serviceAccountTokenCreator on offvia-bronze@offvia-test.iam.gserviceaccount.com',
        'roles/iam.serviceAccountTokenCreator on offvia-trigger@offvia-test.iam.gserviceaccount.com',
        'roles/pubsub.publisher on booking-events-bronze-dlq',
        'roles/pubsub.publisher on booking-events-dlq',
        'roles/pubsub.subscriber on ${INGEST_BOOKING_SUBSCRIPTION}',
        'roles/pubsub.subscriber on booking-events-bronze',
      ]);
      // The Bronze subscription writes as its own account, which may touch the Bronze table only.
      assert.deepEqual(table.get(SA('bronze')), [
        `roles/bigquery.dataEditor on ${P}:offvia_bronze.raw_bookings`,
      ]);
      // Cloud Build runs as offvia-build, not the project's default build account (often Editor).
      assert.deepEqual(table.get(SA('build')), [
        'roles/artifactregistry.writer on project',
        'roles/logging.logWriter on project',
        'roles/storage.objectAdmin on project',
      ]);
      for (const c of allCommands(full).filter((c) => starts(c, 'gcloud', 'functions', 'deploy'))) {
        assert.equal(
          flag(c, '--build-service-account'),
          `projects/${P}/serviceAccounts/${email('build')}`,
        );
      }
      assert.equal(table.size, 8);
    });

    it('runs each function as its own service account, created before any grant to it', () => {
      const accounts = new Set<string>();
      for (const c of allCommands(full).filter((c) => starts(c, 'gcloud', 'functions', 'deploy'))) {
        accounts.add(flag(c, '--service-account') ?? '');
      }
      assert.equal(accounts.size, 3);
      for (const id of ['ingest', 'sweep', 'windows', 'trigger', 'scheduler']) {
        const created = stepIndex(full, `gcloud iam service-accounts create offvia-${id}`);
        const firstGrant = full.steps.findIndex((s) =>
          commandsOf(s).some(
            (c) =>
              c.some(
                (a) => a.endsWith('add-iam-policy-binding') || a === 'add-invoker-policy-binding',
              ) && c.includes(`--member=${SA(id)}`),
          ),
        );
        assert.ok(created < firstGrant, id);
      }
    });
  });

  describe('idempotence and determinism', () => {
    it('guards every create and deploy with a check, and runs unguarded only commands that are safe to repeat', () => {
      const safe = (c: Command): boolean =>
        starts(c, 'gcloud', 'services', 'enable') ||
        starts(c, 'gcloud', 'beta', 'services', 'identity', 'create') ||
        c.some((a) => a.endsWith('add-iam-policy-binding') || a === 'add-invoker-policy-binding') ||
        starts(c, 'gcloud', 'pubsub', 'subscriptions', 'update') ||
        // A line for the operator (the ingest subscription offvia seek acts on): prints, changes nothing.
        (starts(c, 'bash', '-c') && /^echo "[^"]*"$/.test(c[2] ?? '')) ||
        (starts(c, 'bq') && c.includes('query'));
      for (const step of full.steps) {
        if (step.kind === 'run') assert.ok(safe(step.command), step.title);
        if (step.kind === 'ensure') assert.ok(step.absent ?? step.present, step.title);
      }
      for (const c of allCommands(full).filter((c) => starts(c, 'bq') && c.includes('query'))) {
        for (const create of (c.at(-1) ?? '').match(
          /CREATE\s+(?:OR\s+REPLACE\s+)?\w+(?:\s+IF\s+NOT\s+EXISTS)?/gi,
        ) ?? []) {
          assert.match(create, /OR\s+REPLACE|IF\s+NOT\s+EXISTS/i, create);
        }
      }
      const creates = allCommands(full).filter((c) => c.includes('create') || c.includes('deploy'));
      for (const c of creates) {
        const step = full.steps.find((s) => commandsOf(s).includes(c)) as Step;
        const guarded =
          step.kind === 'ensure' || starts(c, 'gcloud', 'beta', 'services', 'identity', 'create');
        assert.ok(guarded, c.join(' '));
      }
    });

    it('skips a function deploy when the live revision carries the digest of this source and configuration', () => {
      const step = full.steps.find(
        (s): s is Extract<Step, { kind: 'ensure' }> =>
          s.kind === 'ensure' &&
          s.absent?.[2] === 'deploy' &&
          s.absent[3] === 'offvia-ingest-booking',
      );
      assert.ok(step && step.probe.kind === 'line', "step && step.probe.kind === 'line'");
      // Skipped only when the function is ACTIVE and carries the digest: a failed build can leave the label set.
      assert.equal(
        flag(step.probe.command, '--format'),
        'value[separator=" "](state,labels.offvia_deploy)',
      );
      const [state, digest] = step.probe.line.split(' ');
      assert.equal(state, 'ACTIVE');
      assert.match(digest ?? '', /^[0-9a-f]{32}$/);
      assert.ok(
        step.absent?.includes(`--update-labels=offvia_deploy=${digest}`),
        'the deploy sets the label the probe looks for',
      );
      const other = buildDeployPlan(
        { ...OPTIONS, envOverrides: { OFFVIA_SCHEMA_WINDOW_MINUTES: '5' } },
        repoFacts(),
      );
      const changed = other.steps.find((s) => s.title === step.title);
      assert.ok(
        changed?.kind === 'ensure' &&
          changed.probe.kind === 'line' &&
          changed.probe.line !== step.probe.line,
        "changed?.kind === 'ensure' && changed.probe.kind === 'line' && changed.probe.lin",
      );
    });

    it('runs the function deploy unless the live function is ACTIVE with this digest (fake gcloud)', () => {
      const step = full.steps.find(
        (s): s is Extract<Step, { kind: 'ensure' }> =>
          s.kind === 'ensure' && s.absent?.[2] === 'deploy' && s.probe.kind === 'line',
      );
      assert.ok(step?.probe.kind === 'line');
      const digest = step.probe.line.split(' ')[1] ?? '';
      // describe prints what $DESCRIBED holds (as gcloud's value[separator=" "] would); deploy says so.
      const fake =
        'if [[ "$2" == describe ]]; then printf \'%s\\n\' "$DESCRIBED"; ' +
        'elif [[ "$2" == deploy ]]; then echo DEPLOYED; fi';
      withFakeGcloud(fake, (runScript) => {
        const script = renderPlan([], [step]);
        const run = (described: string): string =>
          runScript(script, { DESCRIBED: described }).stdout;
        assert.doesNotMatch(run(`ACTIVE ${digest}`), /DEPLOYED/);
        assert.match(run(`FAILED ${digest}`), /DEPLOYED/, 'a failed build that left the label');
        assert.match(run(`DEPLOYING ${digest}`), /DEPLOYED/);
        assert.match(run(`ACTIVE ${'0'.repeat(32)}`), /DEPLOYED/, 'another digest');
        assert.match(run(''), /DEPLOYED/, 'no function yet');
      });
    });

    it('gives the same plan twice (a second plan for an existing deployment is the same)', () => {
      const first = renderPlan(plan.header, plan.steps);
      const again = buildDeployPlan(OPTIONS, repoFacts());
      assert.equal(renderPlan(again.header, again.steps), first);
      assert.deepEqual(again.files, plan.files);
    });

    it('changes every name the prefix governs, and only those', () => {
      const other = buildDeployPlan({ ...OPTIONS, namePrefix: 'stg-' }, repoFacts());
      const text = renderPlan(other.header, other.steps);
      assert.ok(
        !/offvia-(ingest|sweep|trigger|scheduler|schema-sweep|ingest-booking)\b/.test(text),
        '!/offvia-(ingest|sweep|trigger|scheduler|schema-sweep|ingest-booking)\\b/.test(te',
      );
      assert.match(text, /stg-ingest-booking/);
      assert.match(text, /topics create booking-events /);
      assert.match(text, /offvia_silver/);
    });
  });

  describe('refuses what it cannot deploy correctly', () => {
    const base = repoFacts();

    it('fireWindows writing a dataset sql/ does not create', () => {
      const facts = repoFacts();
      assert.throws(
        () => buildDeployPlan(OPTIONS, { ...facts, pipelineSqlFiles: bookingSqlWithoutGold() }),
        /fireWindows writes to table offvia_gold\.route_panes, which pipeline booking's DDL files do not create/,
      );
    });

    it('bad options and bad OFFVIA_* values, naming the flag or variable', () => {
      assert.throws(
        () => buildDeployPlan({ ...OPTIONS, project: 'Bad_Project' }, base),
        /--project/,
      );
      assert.throws(
        () => buildDeployPlan({ ...OPTIONS, namePrefix: 'a-very-long-prefix-' }, base),
        /--name-prefix/,
      );
      assert.throws(
        () =>
          buildDeployPlan(
            { ...OPTIONS, envOverrides: { OFFVIA_SCHEMA_WINDOW_MINUTES: 'soon' } },
            base,
          ),
        /OFFVIA_SCHEMA_WINDOW_MINUTES/,
      );
      assert.throws(
        () => buildDeployPlan({ ...OPTIONS, envOverrides: { PATH: '/x' } }, base),
        /only OFFVIA_\*/,
      );
      assert.throws(
        () => buildDeployPlan({ ...OPTIONS, notificationChannels: ['email:me@example.com'] }, base),
        /--notification-channel/,
      );
      // nodejs20 is decommissioned on Cloud Functions since 2026-10-30: refused, not deployed.
      assert.throws(() => buildDeployPlan({ ...OPTIONS, runtime: 'nodejs20' }, base), /--runtime/);
    });

    it('warns in the header when no notification channel is given (alerts would notify nobody)', () => {
      const quiet = buildDeployPlan({ ...OPTIONS, notificationChannels: [] }, base);
      assert.ok(quiet.header.some((h) => /^WARNING: no --notification-channel/.test(h)));
      assert.ok(!plan.header.some((h) => /WARNING/.test(h)), 'no warning with a channel');
    });

    it('fails the run when the Firestore database exists in Datastore mode', () => {
      const step = plan.steps.find(
        (s): s is Extract<Step, { kind: 'ensure' }> =>
          s.kind === 'ensure' && s.probe.kind === 'line' && s.probe.line === 'FIRESTORE_NATIVE',
      );
      assert.ok(step?.probe.kind === 'line' && step.absent);
      assert.equal(flag(step.probe.command, '--format'), 'value(type)');
      assert.ok(
        plan.steps.indexOf(step) > stepIndex(plan, 'gcloud firestore databases create'),
        'checked after the create-if-missing step',
      );
      const script = renderPlan([], [step]);
      const run = (type: string): number | null =>
        withFakeGcloud(`echo ${type}`, (runScript) => runScript(script).status);
      assert.equal(run('FIRESTORE_NATIVE'), 0);
      assert.notEqual(run('DATASTORE_MODE'), 0);
    });

    it('normalises --bq-location (eu → EU, as BigQuery accepts) and prints usage for an unknown flag', () => {
      const args = (extra: string[]) =>
        parseCli(['deploy', '--project', P, '--region', R, ...extra]).options.bqLocation;
      assert.equal(args(['--bq-location', 'eu']), 'EU');
      assert.equal(args(['--bq-location', 'us']), 'US');
      assert.equal(args(['--bq-location', 'Europe-West1']), 'europe-west1');
      assert.equal(args([]), R);
      assert.throws(
        () => parseCli(['deploy', '--project', P, '--region', R, '--regoin', 'x']),
        (err: Error) => /--regoin/.test(err.message) && /usage: deploy\.sh/.test(err.message),
      );
    });

    it('refuses a single-valued flag given twice (node parseArgs would keep the last one silently)', () => {
      for (const [flag, a, b] of [
        ['--project', 'offvia-aaaa', 'offvia-bbbb'],
        ['--region', 'europe-west1', 'us-central1'],
        [
          '--kms-key',
          'projects/k/locations/europe-west1/keyRings/r/cryptoKeys/a',
          'projects/k/locations/europe-west1/keyRings/r/cryptoKeys/b',
        ],
        ['--firestore-database', 'offvia', 'other-db'],
        ['--passenger-id-hmac-secret', 's:1', 's:2'],
        ['--topic-retention', '7d', '1d'],
      ] as const) {
        const base =
          flag === '--project' || flag === '--region' ? [] : ['--project', P, '--region', R];
        assert.throws(
          () => parseCli(['deploy', ...base, flag, a, `${flag}=${b}`]),
          (err: Error) => err.message.startsWith(`${flag} is given twice`),
          flag,
        );
      }
      // Repeatable flags stay repeatable.
      const twice = parseCli([
        'deploy',
        '--project',
        P,
        '--region',
        R,
        '--publisher',
        'serviceAccount:a@p.iam.gserviceaccount.com',
        '--publisher',
        'serviceAccount:b@p.iam.gserviceaccount.com',
      ]);
      assert.equal(twice.options.publishers.length, 2);
    });

    it('deploys every function on the runtime --runtime names (nodejs24), nodejs22 by default', () => {
      const deploys = (p: Plan): Command[] =>
        allCommands(p).filter((c) => starts(c, 'gcloud', 'functions', 'deploy'));
      assert.ok(deploys(plan).length >= 2);
      for (const c of deploys(plan)) assert.equal(flag(c, '--runtime'), 'nodejs22');
      const on24 = buildDeployPlan({ ...OPTIONS, runtime: 'nodejs24' }, base);
      assert.equal(deploys(on24).length, deploys(plan).length);
      for (const c of deploys(on24)) assert.equal(flag(c, '--runtime'), 'nodejs24');
    });

    it('keeps every known function spec deployable (gen2 limits)', () => {
      for (const spec of FUNCTION_SPECS.values()) {
        assert.ok(spec.timeoutSeconds <= (spec.trigger === 'topic' ? 540 : 3600), spec.entryPoint);
        assert.ok(spec.concurrency === 1 || Number(spec.cpu) >= 1, spec.entryPoint);
        assert.ok(
          spec.maxInstances >= 1 && spec.minInstances <= spec.maxInstances,
          spec.entryPoint,
        );
      }
    });
  });
});

describe('gcloud deploy plan with the watermark hold from Cloud Monitoring', () => {
  it('warns in the header that fireWindows needs roles/monitoring.viewer, which the plan does not grant', () => {
    const hold = (env: Record<string, string>): string[] =>
      buildDeployPlan({ ...OPTIONS, envOverrides: env }, repoFacts()).header.filter((l) =>
        /monitoring\.viewer/.test(l),
      );
    const warned = hold({
      OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring',
      OFFVIA_WATERMARK_HOLD_SUBSCRIPTION: 'eventarc-europe-west1-offvia-ingest-booking-1',
    });
    assert.equal(warned.length, 1, 'one warning line');
    assert.match(warned[0] ?? '', /^WARNING: OFFVIA_WATERMARK_HOLD_SOURCE=monitoring/);
    assert.match(
      warned[0] ?? '',
      /serviceAccount:offvia-windows@offvia-test\.iam\.gserviceaccount\.com/,
    );
    assert.deepEqual(hold({}), []);
    assert.deepEqual(hold({ OFFVIA_WATERMARK_HOLD_SOURCE: 'local' }), []);
  });
});

describe('gcloud teardown plan', () => {
  const facts = repoFacts();
  const keep = buildTeardownPlan({ ...OPTIONS, deleteData: false }, facts);
  const wipe = buildTeardownPlan({ ...OPTIONS, deleteData: true }, facts);
  const deletes = (p: Plan): Command[] =>
    p.steps.flatMap((s) => (s.kind === 'ensure' && s.present ? [s.present] : []));

  it('deletes only what exists, and only after checking', () => {
    for (const step of keep.steps) {
      assert.ok(step.kind === 'ensure' || step.kind === 'note', step.title);
      if (step.kind === 'ensure') assert.equal(step.absent, undefined, step.title);
    }
  });

  it('removes jobs, policies, metrics, every known function, Bronze, project grants and accounts, in that order', () => {
    const order = deletes(keep).map((c) => c.slice(0, 4).join(' '));
    const firstOf = (prefix: string): number => order.findIndex((o) => o.startsWith(prefix));
    const sequence = [
      'gcloud scheduler jobs delete',
      'gcloud alpha monitoring policies',
      'gcloud logging metrics delete',
      'gcloud functions delete',
      'gcloud pubsub subscriptions delete',
      'gcloud projects remove-iam-policy-binding',
      'gcloud iam service-accounts delete',
    ].map(firstOf);
    assert.ok(
      sequence.every((i) => i !== -1),
      String(sequence),
    );
    assert.deepEqual(
      [...sequence].sort((a, b) => a - b),
      sequence,
    );
    for (const spec of FUNCTION_SPECS.values()) {
      assert.ok(
        deletes(keep).some((c) =>
          starts(c, 'gcloud', 'functions', 'delete', `offvia-${spec.baseName}`),
        ),
        "deletes(keep).some((c) => starts(c, 'gcloud', 'functions', 'delete', `offvia-${s",
      );
    }
  });

  it('keeps data unless --delete-data: datasets, topics and dead letters', () => {
    const dataCommand = (c: Command): boolean =>
      (starts(c, 'bq') && c.includes('rm')) ||
      starts(c, 'gcloud', 'pubsub', 'topics', 'delete') ||
      (starts(c, 'gcloud', 'pubsub', 'subscriptions', 'delete') &&
        c.includes('booking-events-dlq-hold'));
    assert.ok(!deletes(keep).some(dataCommand), '!deletes(keep).some(dataCommand)');
    const wiped = deletes(wipe)
      .filter(dataCommand)
      .map((c) => (c.at(-1) === '--quiet' ? c[4] : c.at(-1)));
    // The Firestore documents of both stores go too, or a redeploy inherits the old watermark and ledger.
    const bulk = allCommands(wipe).filter((c) => starts(c, 'gcloud', 'firestore', 'bulk-delete'));
    assert.equal(bulk.length, 1);
    assert.ok(!allCommands(keep).some((c) => starts(c, 'gcloud', 'firestore', 'bulk-delete')));
    const ids = (flag(bulk[0] ?? [], '--collection-ids') ?? '').split(',');
    for (const id of [
      'offviaWindows',
      'meta',
      'eventLedger',
      'windows',
      'offviaSchemaDrift',
      'rows',
    ]) {
      assert.ok(ids.includes(id), id);
    }
    const renamed = buildTeardownPlan(
      { ...OPTIONS, deleteData: true, envOverrides: { OFFVIA_WINDOW_FIRESTORE_ROOT: 'otherRoot' } },
      facts,
    );
    assert.ok(
      allCommands(renamed).some((c) =>
        (flag(c, '--collection-ids') ?? '').split(',').includes('otherRoot'),
      ),
    );
    assert.deepEqual(wiped, [
      'booking-events-dlq-hold',
      'booking-events-bronze-dlq',
      'booking-events-dlq',
      'booking-events',
      ...datasetsCreated(facts.pipelineSqlFiles.booking ?? [])
        .reverse()
        .map((d) => `${P}:${d}`),
    ]);
  });
});
