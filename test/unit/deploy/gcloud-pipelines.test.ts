// The deploy and teardown plans over the pipeline registry: both pipelines deployed side by side with separate
// topics, tables, functions, accounts, Firestore namespaces and monitoring; booking's plan unchanged by the second
// pipeline; tearing one pipeline down deletes nothing of the other (names taken from the definitions) nor anything
// shared; `--pipeline` and `--all` parsed and refused as documented.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  parseCli,
  planFor,
  readRepoFacts,
  REPO_ROOT,
  teardownScopeProblem,
} from '../../../deploy/gcloud/cli';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import type { DeployOptions, Plan, RepoFacts } from '../../../deploy/gcloud/options';
import { parseDeleteRootArgs } from '../../../deploy/gcloud/delete-firestore-root';
import { planViolations } from '../../../deploy/gcloud/plan-checks';
import { monitoringPrefix, selectPipelines } from '../../../deploy/gcloud/pipelines';
import { type Command, flagValue, renderPlan } from '../../../deploy/gcloud/steps';
import { buildTeardownPlan } from '../../../deploy/gcloud/teardown-plan';
import { datasetsCreated } from '../../../deploy/gcloud/sql';
import { alertPolicies, logMetrics } from '../../../deploy/gcloud/monitoring';
import { pipelineMonitoringTargets } from '../../../deploy/gcloud/pipeline-plan';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import {
  pipelineFirestoreRoots,
  pipelineFunctions,
  pipelinePubSubIds,
  pipelineServiceAccounts,
  pipelineTables,
} from '../../../shared/pipeline/registry-checks';
import { PIPELINES, pipelineNamed } from '../../../shared/pipelines';

import { OPTIONS, P } from '../../support/deploy-plans';

const booking = pipelineNamed('booking');
const telemetry = pipelineNamed('telemetry');
const ALL = PIPELINES.map((p) => p.name);
const email = (base: string): string => `offvia-${base}@${P}.iam.gserviceaccount.com`;
const starts = (c: Command, ...words: string[]): boolean => words.every((w, i) => c[i] === w);
/** The commands that change something (a run, or an ensure's create/update/delete), probes left out. */
const actions = (plan: Plan): Command[] =>
  plan.steps.flatMap((s) =>
    s.kind === 'run' || s.kind === 'capture'
      ? [s.command]
      : s.kind === 'ensure'
        ? [...(s.absent ? [s.absent] : []), ...(s.present ? [s.present] : [])]
        : [],
  );

/**
 * Every name a pipeline owns in a deployment: topics and subscriptions, tables and datasets, function and job
 * names, service account emails, Firestore roots, metric and alert policy names; from its definition.
 */
function ownedNames(o: DeployOptions, p: AnyPipelineDefinition, facts: RepoFacts): Set<string> {
  const names = new Set<string>();
  for (const { id } of pipelinePubSubIds(p)) names.add(id);
  for (const { table } of pipelineTables(p)) {
    names.add(table);
    names.add(table.split('.')[0] ?? '');
  }
  for (const f of pipelineFunctions(p)) names.add(`${o.namePrefix}${f.baseName}`);
  for (const { base } of pipelineServiceAccounts(p)) names.add(email(base));
  for (const root of pipelineFirestoreRoots(p)) names.add(root);
  if (p.name === 'booking') {
    for (const d of datasetsCreated(facts.pipelineSqlFiles.booking ?? [])) names.add(d);
  }
  const targets = pipelineMonitoringTargets(o, p);
  const prefix = p.name === 'booking' ? o.namePrefix : monitoringPrefix(o, p);
  for (const m of logMetrics({ ...targets, prefix })) names.add(m.name);
  for (const a of alertPolicies({ ...targets, prefix })) names.add(a.displayName);
  return names;
}

/** The names a command touches: its arguments split at `=`, `:`, `,`, quotes, spaces and `@project…`. */
function tokens(c: Command): string[] {
  return c.flatMap((a) => [a, ...a.split(/[=,"\s:]+/)]).filter((t) => t.length > 0);
}

describe('deploy plan over the pipeline registry', () => {
  const facts = readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation);
  const both = buildDeployPlan({ ...OPTIONS, pipelines: ALL }, facts);
  const bookingOnly = buildDeployPlan({ ...OPTIONS, pipelines: ['booking'] }, facts);

  it('keeps the booking plan: its steps are the legacy plan, and the two-pipeline plan holds every one of them', () => {
    const legacy = buildDeployPlan(OPTIONS, facts);
    assert.deepEqual(bookingOnly.steps, legacy.steps);
    // Concept by concept: booking's steps are among the two-pipeline plan's, in the same order.
    const text = (s: unknown): string => JSON.stringify(s);
    let at = 0;
    for (const step of legacy.steps) {
      at = both.steps.findIndex((s, i) => i >= at && text(s) === text(step)) + 1;
      assert.ok(at > 0, `${step.title} is in the two-pipeline plan, after the steps before it`);
    }
    assert.ok(both.steps.length > legacy.steps.length);
    // The header gains the other pipelines' functions and topics, and its last line naming the pipelines.
    const sameLines = (h: readonly string[]): string[] =>
      h.filter((l) => !/^(name prefix |seek: |pipelines: )/.test(l));
    assert.deepEqual(sameLines(legacy.header), sameLines(both.header));
    assert.match(both.header.at(-1) ?? '', /^pipelines: booking, telemetry /);
  });

  it("names the selected pipelines' functions and topics in the header, and only theirs", () => {
    const line = (h: readonly string[], start: string): string =>
      h.find((l) => l.startsWith(start)) ?? '';
    const alone = buildDeployPlan({ ...OPTIONS, pipelines: ['telemetry'] }, facts);
    const fn = line(alone.header, 'name prefix ');
    assert.match(fn, /ingestTelemetry → offvia-ingest-telemetry/);
    assert.match(fn, /fireTelemetryWindows → offvia-fire-telemetry-windows/);
    assert.doesNotMatch(fn, /ingestBooking/);
    const seek = line(alone.header, 'seek: ');
    assert.match(seek, /telemetry-events/);
    assert.doesNotMatch(seek, /booking-events/);
    const all = line(both.header, 'name prefix ');
    assert.match(
      all,
      /ingestBooking → offvia-ingest-booking.*ingestTelemetry → offvia-ingest-telemetry/,
    );
    assert.match(line(both.header, 'seek: '), /booking-events, telemetry-events/);
    assert.doesNotMatch(line(bookingOnly.header, 'name prefix '), /Telemetry/);
  });

  it('gives each pipeline its own topics, subscriptions, tables, functions and accounts', () => {
    const all = actions(both);
    for (const p of PIPELINES) {
      for (const topic of [p.pubsub.topic, p.pubsub.deadLetterTopic]) {
        assert.ok(
          all.some((c) => starts(c, 'gcloud', 'pubsub', 'topics', 'create', topic)),
          `${p.name} topic ${topic}`,
        );
      }
      const bronze = p.pubsub.subscriptions.bronze ?? '';
      const create = all.find((c) =>
        starts(c, 'gcloud', 'pubsub', 'subscriptions', 'create', bronze),
      );
      assert.ok(create, `${p.name} Bronze ${bronze}`);
      const table = p.tables.bronze;
      assert.equal(
        flagValue(create, '--bigquery-table'),
        `${P}.${table?.datasetId ?? ''}.${table?.tableId ?? ''}`,
      );
      assert.equal(
        flagValue(create, '--bigquery-service-account-email'),
        email(p.serviceAccounts.bronze ?? ''),
      );
      for (const f of pipelineFunctions(p)) {
        const deploy = all.find((c) =>
          starts(c, 'gcloud', 'functions', 'deploy', `offvia-${f.baseName}`),
        );
        assert.ok(deploy, `${p.name} function ${f.baseName}`);
        assert.equal(flagValue(deploy, '--entry-point'), f.entryPoint);
        const account =
          f.role === 'ingest'
            ? p.serviceAccounts.ingest
            : f.role === 'fireWindows'
              ? p.serviceAccounts.fireWindows
              : p.serviceAccounts.schemaSweep;
        assert.equal(flagValue(deploy, '--service-account'), email(account ?? ''));
      }
      for (const { base } of pipelineServiceAccounts(p)) {
        assert.ok(
          all.some((c) =>
            starts(c, 'gcloud', 'iam', 'service-accounts', 'create', `offvia-${base}`),
          ),
          `${p.name} account ${base}`,
        );
      }
    }
    // Telemetry's DDL files run, in their order, after booking's sql/.
    const ddl = both.steps.map((s) => s.title).filter((t) => t.startsWith('BigQuery DDL '));
    const telemetryDdl = telemetry.tables.ddlFiles.map((f) => `BigQuery DDL ${f}`);
    assert.deepEqual(
      ddl.filter((t) => t.includes('pipelines/telemetry')),
      telemetryDdl,
    );
    assert.ok(ddl.includes('BigQuery DDL sql/010_bronze_raw_bookings.sql'));
  });

  it("grants each pipeline's accounts only on that pipeline's tables (and telemetry's ingest reads its reference)", () => {
    const tablesOf = (p: AnyPipelineDefinition): Set<string> =>
      new Set(pipelineTables(p).map((t) => `${P}:${t.table}`));
    const datasetsOf = (p: AnyPipelineDefinition): Set<string> =>
      new Set(pipelineTables(p).map((t) => `${P}:${t.table.split('.')[0] ?? ''}`));
    let checked = 0;
    for (const p of PIPELINES) {
      const members = new Set(
        pipelineServiceAccounts(p).map(({ base }) => `--member=serviceAccount:${email(base)}`),
      );
      for (const c of actions(both).filter(
        (x) => x[0] === 'bq' && x.includes('add-iam-policy-binding'),
      )) {
        if (!c.some((a) => members.has(a))) continue;
        const resource = c.at(-1) ?? '';
        if (c.includes('--table'))
          assert.ok(tablesOf(p).has(resource), `${p.name}: ${c.join(' ')}`);
        else assert.ok(datasetsOf(p).has(resource), `${p.name}: ${c.join(' ')}`);
        checked += 1;
      }
    }
    assert.ok(checked > 20, String(checked));
    const reference = telemetry.tables.reference[0];
    const read = actions(both).find(
      (c) =>
        c.includes(`--member=serviceAccount:${email(telemetry.serviceAccounts.ingest)}`) &&
        c.includes('--role=roles/bigquery.dataViewer'),
    );
    assert.equal(read?.at(-1), `${P}:${reference?.datasetId ?? ''}.${reference?.tableId ?? ''}`);
  });

  it("holds telemetry's watermark behind its ingest subscription's backlog: env and Monitoring read for fireWindows only", () => {
    const windowsMember = `--member=serviceAccount:${email(telemetry.serviceAccounts.fireWindows)}`;
    const viewer = actions(both).filter((c) => c.includes('--role=roles/monitoring.viewer'));
    assert.deepEqual(
      viewer.map((c) => c.find((a) => a.startsWith('--member='))),
      [windowsMember],
    );
    const deploy = actions(both).find(
      (c) =>
        starts(c, 'gcloud', 'functions', 'deploy') &&
        c.includes(`--entry-point=${telemetry.functions.fireWindows.entryPoint}`),
    );
    const env = flagValue(deploy ?? [], '--set-env-vars') ?? '';
    assert.match(env, /OFFVIA_WATERMARK_HOLD_SOURCE=monitoring/);
    assert.ok(
      env.includes(`OFFVIA_WATERMARK_HOLD_SUBSCRIPTION=${telemetry.pubsub.subscriptions.ingest}`),
      env,
    );
  });

  it('creates the telemetry ingest subscription itself, ordered, pushing to its function as the trigger account', () => {
    const name = telemetry.pubsub.subscriptions.ingest;
    const create = actions(both).find((c) =>
      starts(c, 'gcloud', 'pubsub', 'subscriptions', 'create', name),
    );
    assert.ok(create);
    assert.ok(create.includes('--enable-message-ordering'));
    assert.equal(flagValue(create, '--topic'), telemetry.pubsub.topic);
    assert.equal(
      flagValue(create, '--push-endpoint'),
      `\${INGEST_TELEMETRY_URL}/projects/${P}/topics/${telemetry.pubsub.topic}`,
    );
    assert.equal(flagValue(create, '--push-auth-service-account'), email('trigger'));
    assert.equal(
      flagValue(create, '--dead-letter-topic'),
      `projects/${P}/topics/${telemetry.pubsub.deadLetterTopic}`,
    );
    // Ordering cannot be added later: the plan reads it back and stops when it is missing.
    assert.ok(
      both.steps.some(
        (s) =>
          s.kind === 'ensure' &&
          s.probe.kind === 'line' &&
          s.probe.command.includes('--format=value(enableMessageOrdering)'),
      ),
    );
    // Booking's ingest subscription is still Eventarc's, unordered.
    assert.ok(
      !actions(both).some((c) => c.includes('--enable-message-ordering') && !c.includes(name)),
    );
  });

  it('schedules each pipeline its own fireWindows job and gives it its own metrics, policies and dashboard', () => {
    const jobs = actions(both)
      .filter((c) => starts(c, 'gcloud', 'scheduler', 'jobs', 'create'))
      .map((c) => c[5]);
    assert.ok(jobs.includes(`offvia-${booking.functions.fireWindows.baseName}`));
    assert.ok(jobs.includes(`offvia-${telemetry.functions.fireWindows.baseName}`));
    const sweep = telemetry.functions.schemaSweep;
    assert.equal(sweep, null, 'telemetry has no sweep, so no sweep job');
    const titles = both.steps.map((s) => s.title);
    for (const what of ['Log-based metric', 'Alert policy', 'Cloud Monitoring dashboard']) {
      assert.ok(
        titles.some((t) => t.startsWith(`${what} offvia-telemetry-`)),
        what,
      );
    }
    assert.ok(titles.includes('Cloud Monitoring dashboard offvia-pipeline'));
    assert.ok(both.files.some((f) => f.path.endsWith('dashboards/telemetry-pipeline.json')));
    assert.equal(
      new Set(both.files.map((f) => f.path)).size,
      both.files.length,
      'no file written twice',
    );
  });

  it("keeps each pipeline's Firestore state under its own roots and plans the database and TTL policies once", () => {
    const notes = both.steps.filter((s) => s.kind === 'note').map((s) => s.title);
    assert.ok(
      notes.some((n) => n.includes(`Firestore namespace ${telemetry.firestore.windowsRoot}`)),
    );
    assert.notEqual(telemetry.firestore.windowsRoot, booking.firestore.windowsRoot);
    const once = (prefix: string): number =>
      actions(both).filter((c) => starts(c, ...prefix.split(' '))).length;
    assert.equal(once('gcloud firestore databases create'), 1);
    assert.equal(once('gcloud services enable'), 1);
    assert.equal(once(`gcloud iam service-accounts create offvia-trigger`), 1);
    assert.equal(once(`gcloud iam service-accounts create offvia-build`), 1);
    const ttl = actions(both).filter((c) =>
      starts(c, 'gcloud', 'firestore', 'fields', 'ttls', 'update'),
    );
    assert.equal(new Set(ttl.map((c) => flagValue(c, '--collection-group'))).size, ttl.length);
  });

  it('plans telemetry alone with the shared foundation and nothing of booking', () => {
    const alone = buildDeployPlan({ ...OPTIONS, pipelines: ['telemetry'] }, facts);
    const bookingNames = ownedNames(OPTIONS, booking, facts);
    for (const c of actions(alone)) {
      for (const t of tokens(c)) assert.ok(!bookingNames.has(t), `${t} in ${c.join(' ')}`);
    }
    assert.ok(actions(alone).some((c) => starts(c, 'gcloud', 'firestore', 'databases', 'create')));
    assert.ok(actions(alone).some((c) => starts(c, 'gcloud', 'iam', 'roles', 'create')));
    assert.deepEqual(planViolations(alone.steps, OPTIONS), []);
  });

  it("creates the shared accounts once, before another pipeline's functions, with or without booking", () => {
    for (const pipelines of [ALL, ['telemetry']]) {
      const plan = buildDeployPlan({ ...OPTIONS, pipelines }, facts);
      const all = actions(plan);
      const at = (pred: (c: Command) => boolean): number => all.findIndex(pred);
      const firstDeploy = at((c) =>
        starts(c, 'gcloud', 'functions', 'deploy', `offvia-${telemetry.functions.ingest.baseName}`),
      );
      assert.ok(firstDeploy > 0);
      for (const base of ['trigger', 'scheduler', 'build']) {
        const created = all.filter((c) =>
          starts(c, 'gcloud', 'iam', 'service-accounts', 'create', `offvia-${base}`),
        );
        assert.equal(created.length, 1, base);
        assert.ok(at((c) => c === created[0]) < firstDeploy, base);
      }
      assert.ok(at((c) => starts(c, 'gcloud', 'iam', 'roles', 'create')) < firstDeploy);
    }
  });

  it('passes the security checks with both pipelines, with and without --kms-key', () => {
    assert.deepEqual(planViolations(both.steps, OPTIONS), []);
    const key = 'projects/kms-project/locations/europe-west1/keyRings/offvia/cryptoKeys/data';
    // A key in the region: the datasets and the Firestore database must be there too.
    const o = {
      ...OPTIONS,
      bqLocation: 'europe-west1',
      firestoreLocation: 'europe-west1',
      kmsKey: key,
    };
    const keyed = buildDeployPlan({ ...o, pipelines: ALL }, facts);
    assert.deepEqual(planViolations(keyed.steps, o), []);
    for (const topic of [telemetry.pubsub.topic, telemetry.pubsub.deadLetterTopic]) {
      const create = actions(keyed).find((c) =>
        starts(c, 'gcloud', 'pubsub', 'topics', 'create', topic),
      );
      assert.equal(flagValue(create ?? [], '--topic-encryption-key'), key);
    }
  });

  it('refuses an account id that the name prefix makes too long, naming the pipeline', () => {
    assert.throws(
      () => buildDeployPlan({ ...OPTIONS, namePrefix: 'offvia-stage-x', pipelines: ALL }, facts),
      /pipeline telemetry's .*offvia-stage-xtelemetry-\w+ is not 6–30/,
    );
  });
});

describe('teardown plan over the pipeline registry', () => {
  const facts = readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation);
  const teardown = (pipelines: string[], deleteShared: boolean): Plan =>
    buildTeardownPlan({ ...OPTIONS, pipelines, deleteShared, deleteData: true }, facts);

  it("--pipeline telemetry's notes name no booking dataset", () => {
    const notes = teardown(['telemetry'], false)
      .steps.filter((s) => s.kind === 'note')
      .map((s) => s.title);
    assert.ok(notes.some((n) => n.startsWith('never deleted here')));
    for (const n of notes) assert.doesNotMatch(n, /offvia_bronze\b/);
    const bookingNotes = teardown(['booking'], false).steps.filter((s) => s.kind === 'note');
    assert.ok(bookingNotes.some((s) => /grant on offvia_bronze/.test(s.title)));
  });

  for (const [gone, kept] of [
    [telemetry, booking],
    [booking, telemetry],
  ] as const) {
    it(`--pipeline ${gone.name} deletes none of ${kept.name}'s resources, and nothing shared`, () => {
      const plan = teardown([gone.name], false);
      const keptNames = ownedNames(OPTIONS, kept, facts);
      const shared = ['trigger', 'scheduler', 'build'].map(email);
      const deletes = actions(plan);
      assert.ok(deletes.length > 10);
      for (const c of deletes) {
        for (const t of tokens(c)) {
          assert.ok(!keptNames.has(t), `${t} of ${kept.name} in ${c.join(' ')}`);
          assert.ok(!shared.includes(t), `shared ${t} in ${c.join(' ')}`);
        }
      }
      // Firestore: only its own roots, never a collection-group delete (shared ids across pipelines).
      assert.ok(!deletes.some((c) => starts(c, 'gcloud', 'firestore', 'bulk-delete')));
      const roots = deletes
        .filter((c) => c.includes('deploy/gcloud/delete-firestore-root.ts'))
        .map((c) => flagValue(c, '--root'));
      assert.deepEqual(roots, pipelineFirestoreRoots(gone));
      // And it does delete its own: topics, functions and accounts named by its definition.
      const ownNames = ownedNames(OPTIONS, gone, facts);
      for (const name of [
        gone.pubsub.topic,
        `offvia-${gone.functions.ingest.baseName}`,
        email(gone.serviceAccounts.ingest),
      ]) {
        assert.ok(ownNames.has(name));
        assert.ok(
          deletes.some((c) => c.includes(name) && c.includes('delete')),
          `${gone.name} deletes ${name}`,
        );
      }
      assert.deepEqual(planViolations(plan.steps, OPTIONS), []);
    });
  }

  it('--all deletes both pipelines and the shared accounts', () => {
    const plan = teardown(ALL, true);
    const deletes = actions(plan);
    for (const name of [booking.pubsub.topic, telemetry.pubsub.topic]) {
      assert.ok(
        deletes.some((c) => starts(c, 'gcloud', 'pubsub', 'topics', 'delete', name)),
        name,
      );
    }
    for (const base of ['trigger', 'scheduler', 'build']) {
      assert.ok(
        deletes.some((c) => starts(c, 'gcloud', 'iam', 'service-accounts', 'delete', email(base))),
        base,
      );
    }
    assert.match(plan.header.join('\n'), /pipelines: booking, telemetry and the shared resources/);
  });
});

describe('deploy.sh / teardown.sh --pipeline and --all', () => {
  const BASE = ['--project', P, '--region', 'europe-west1'];

  it('deploys every registered pipeline by default, or those named (repeated or comma-separated)', () => {
    assert.deepEqual(parseCli(['deploy', ...BASE]).options.pipelines, ALL);
    assert.deepEqual(parseCli(['deploy', ...BASE, '--pipeline', 'telemetry']).options.pipelines, [
      'telemetry',
    ]);
    assert.deepEqual(
      parseCli(['deploy', ...BASE, '--pipeline', 'telemetry,booking']).options.pipelines,
      ['booking', 'telemetry'],
    );
    assert.deepEqual(
      parseCli(['deploy', ...BASE, '--pipeline=booking', '--pipeline', 'booking']).options
        .pipelines,
      ['booking'],
    );
  });

  it('refuses an unknown pipeline in one line naming the registered ones', () => {
    assert.throws(
      () => parseCli(['deploy', ...BASE, '--pipeline', 'booking,weather']),
      (err: Error) =>
        err.message === '--pipeline: no pipeline "weather" (registered: booking, telemetry)',
    );
    assert.throws(() => selectPipelines(['']), /no pipeline ""/);
  });

  it('makes teardown name its pipelines or --all, and never both', () => {
    const unnamed = parseCli(['teardown', ...BASE]);
    assert.match(teardownScopeProblem(unnamed) ?? '', /--pipeline NAME .* or pass --all/);
    const named = parseCli(['teardown', ...BASE, '--pipeline', 'telemetry']);
    assert.equal(teardownScopeProblem(named), undefined);
    assert.match(
      planFor(named).header.join('\n'),
      /pipelines: telemetry \(shared resources kept\)/,
    );
    const all = parseCli(['teardown', ...BASE, '--all']);
    assert.match(planFor(all).header.join('\n'), /pipelines: booking, telemetry and the shared/);
    assert.throws(
      () => parseCli(['teardown', ...BASE, '--all', '--pipeline', 'booking']),
      /give one/,
    );
    assert.throws(() => parseCli(['deploy', ...BASE, '--all']), /teardown flag/);
  });

  it('teardown.sh and deploy.sh exit 2 with one line for a missing scope or an unknown pipeline', function () {
    this.timeout(60_000);
    const run = (script: string, args: string[]) =>
      spawnSync('bash', [path.join(REPO_ROOT, 'deploy', 'gcloud', script), ...args, '--dry-run'], {
        encoding: 'utf8',
      });
    const unscoped = run('teardown.sh', BASE);
    assert.equal(unscoped.status, 2);
    assert.equal(unscoped.stderr.trim().split('\n').length, 1, unscoped.stderr);
    assert.equal(unscoped.stdout, '');
    const unknown = run('deploy.sh', [...BASE, '--pipeline', 'weather']);
    assert.equal(unknown.status, 2);
    assert.equal(
      unknown.stderr.trim(),
      '--pipeline: no pipeline "weather" (registered: booking, telemetry)',
    );
    const telemetryOnly = run('teardown.sh', [
      ...BASE,
      '--pipeline',
      'telemetry',
      '--out-dir',
      '/dev/null',
    ]);
    assert.equal(telemetryOnly.status, 0, telemetryOnly.stderr);
    assert.doesNotMatch(
      telemetryOnly.stdout,
      new RegExp(`functions delete offvia-${booking.functions.ingest.baseName}\\b`),
    );
    assert.match(
      telemetryOnly.stdout,
      new RegExp(`functions delete offvia-${telemetry.functions.ingest.baseName}`),
    );
  });

  it('renders two-pipeline deploy and single-pipeline teardown plans that pass shellcheck', function () {
    if (spawnSync('shellcheck', ['--version']).status !== 0) {
      if (process.env.CI === 'true') assert.fail('shellcheck is not installed, and CI=true');
      this.skip();
    }
    const facts = readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation);
    for (const plan of [
      buildDeployPlan({ ...OPTIONS, pipelines: ALL }, facts),
      buildTeardownPlan({ ...OPTIONS, pipelines: ['telemetry'], deleteData: true }, facts),
      buildTeardownPlan({ ...OPTIONS, pipelines: ['booking'], deleteData: true }, facts),
    ]) {
      const result = spawnSync('shellcheck', ['-s', 'bash', '-'], {
        input: renderPlan(plan.header, plan.steps),
        encoding: 'utf8',
      });
      assert.equal(result.status, 0, result.stdout);
    }
  });
});

describe('delete-firestore-root.ts arguments', () => {
  it('takes a project, the system database and a root collection, refusing (default) and paths', () => {
    assert.deepEqual(
      parseDeleteRootArgs([
        '--project=offvia-test',
        '--database=offvia',
        '--root=offviaTelemetryWindows',
      ]),
      { project: 'offvia-test', database: 'offvia', root: 'offviaTelemetryWindows' },
    );
    assert.throws(
      () => parseDeleteRootArgs(['--project=p', '--database=(default)', '--root=r']),
      /OFFVIA_FIRESTORE_DATABASE|default/,
    );
    assert.throws(
      () => parseDeleteRootArgs(['--project=p', '--database=offvia', '--root=a/b']),
      /--root: "a\/b"/,
    );
    assert.throws(() => parseDeleteRootArgs(['--project=p']), /usage:/);
  });
});
