// Customer-managed encryption on the rendered plan (`--kms-key`): every place that holds data carries the key, each
// service agent that uses it is granted on the key alone, and without the flag nothing mentions KMS. Also the seek
// that replays into a subscription a redeploy replaced.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KEY_USERS, KMS_ROLE, parseKmsKey } from '../../../deploy/gcloud/kms';
import type { Plan } from '../../../deploy/gcloud/options';
import { kmsCoverageViolations, planViolations } from '../../../deploy/gcloud/plan-checks';
import { datasetsCreated } from '../../../deploy/gcloud/sql';
import { readRepoFacts, REPO_ROOT } from '../../../deploy/gcloud/cli';
import {
  type Command,
  commandsOf,
  flagValue,
  renderPlan,
  type Step,
} from '../../../deploy/gcloud/steps';

import { P, PRINT_DESCRIBED, renderCli, withFakeGcloud } from '../../support/deploy-plans';

const R = 'europe-west1';
const KEY = `projects/kms-project/locations/${R}/keyRings/offvia/cryptoKeys/data`;
const BASE = ['--project', P, '--region', R];
// These tests assert the booking deploy plan's exact resources (topics, accounts, grants); the plan with every
// registered pipeline is checked in gcloud-pipelines.test.ts.

const render = renderCli;
const commands = (plan: Plan): Command[] => plan.steps.flatMap(commandsOf);
const starts = (c: Command, ...words: string[]): boolean => words.every((w, i) => c[i] === w);
/** The error deploy.sh would print for these flags (the CLI prints the message alone, one line). */
const refusal = (...flags: string[]): string => {
  try {
    render('deploy', ...flags);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return '';
};

describe('gcloud plan: customer-managed encryption (--kms-key)', () => {
  const keyed = render('deploy', '--kms-key', KEY);
  /** The ensure step that stops the run unless describe's `--format=value(field)` answers the key. */
  const keyCheck = (field: string) => {
    const check = keyed.plan.steps.find(
      (s) =>
        s.kind === 'ensure' &&
        s.probe.kind === 'line' &&
        s.probe.command.includes(`--format=value(${field})`),
    );
    assert.ok(check?.kind === 'ensure' && check.probe.kind === 'line');
    assert.equal(check.probe.line, KEY);
    return check;
  };
  const plain = render('deploy');
  const all = commands(keyed.plan);
  const datasets = datasetsCreated(readRepoFacts(REPO_ROOT, P, R).pipelineSqlFiles.booking ?? []);

  it('gives every dataset sql/ creates the key as its default, before the DDL creates any table', () => {
    const expected = 'offvia_bronze offvia_silver offvia_quarantine offvia_gold';
    assert.deepEqual(datasets, expected.split(' '));
    const firstDdl = keyed.plan.steps.findIndex((s) => s.title.startsWith('BigQuery DDL sql/'));
    for (const id of datasets) {
      const i = keyed.plan.steps.findIndex((s) =>
        commandsOf(s).some((c) => c[0] === 'bq' && c.includes('mk') && c.at(-1) === `${P}:${id}`),
      );
      assert.ok(i >= 0 && i < firstDdl, `${id}: keyed at step ${i}, DDL from ${firstDdl}`);
      const step = keyed.plan.steps[i];
      assert.ok(step?.kind === 'ensure' && step.absent && step.present);
      assert.equal(flagValue(step.absent, '--default_kms_key'), KEY);
      assert.ok(step.absent.includes(`--location=${R}`));
      // An existing dataset gets the default key too (bq update), so tables created later are keyed.
      assert.ok(step.present.includes('update'));
      assert.equal(flagValue(step.present, '--default_kms_key'), KEY);
    }
  });

  it('encrypts every topic (dead-letter topics too), on create and on update', () => {
    const topics = all.filter(
      (c) => starts(c, 'gcloud', 'pubsub', 'topics') && (c[3] === 'create' || c[3] === 'update'),
    );
    assert.deepEqual([...new Set(topics.map((c) => c[4]))].sort(), [
      'booking-events',
      'booking-events-bronze-dlq',
      'booking-events-dlq',
    ]);
    for (const c of topics) assert.equal(flagValue(c, '--topic-encryption-key'), KEY, c.join(' '));
    assert.ok(topics.some((c) => c[3] === 'update' && c[4] === 'booking-events-dlq'));
  });

  it('deploys every function with the key and an image repository created with the same key', () => {
    const deploys = all.filter((c) => starts(c, 'gcloud', 'functions', 'deploy'));
    assert.equal(deploys.length, 3);
    const repository = `projects/${P}/locations/${R}/repositories/offvia-functions`;
    for (const c of deploys) {
      assert.equal(flagValue(c, '--kms-key'), KEY);
      assert.equal(flagValue(c, '--docker-repository'), repository);
    }
    const create = all.find((c) => starts(c, 'gcloud', 'artifacts', 'repositories', 'create'));
    assert.equal(create?.[4], 'offvia-functions');
    assert.equal(flagValue(create ?? [], '--kms-key'), KEY);
    assert.equal(flagValue(create ?? [], '--location'), R);
    // An existing repository with another key (or none) stops the run: its key cannot change.
    const check = keyCheck('kmsKeyName');
    assert.equal(check.absent?.[0], 'bash');
    const channel = all.find((c) => starts(c, 'gcloud', 'eventarc', 'google-channels', 'update'));
    assert.equal(flagValue(channel ?? [], '--crypto-key'), KEY);
  });

  it("leaves alone an Eventarc Google channel that another key already encrypts (the region's channel is shared)", () => {
    const at = (words: string[]) =>
      keyed.plan.steps.findIndex((s) =>
        commandsOf(s).some((c) => c.join(' ').includes(words.join(' '))),
      );
    const guard = at(['eventarc google-channels describe']);
    const update = at(['gcloud', 'eventarc', 'google-channels', 'update']);
    assert.ok(guard >= 0 && guard < update, `guard ${guard}, update ${update}`);
    const step = keyed.plan.steps[guard];
    assert.ok(step);
    const script = renderPlan([], [step]);
    withFakeGcloud(PRINT_DESCRIBED, (runScript) => {
      const run = (described: string) => runScript(script, { DESCRIBED: described });
      assert.equal(run('').status, 0, 'a channel without a key takes ours');
      assert.equal(run(KEY).status, 0, 'a channel with our key stays');
      const other = run(`projects/other/locations/${R}/keyRings/r/cryptoKeys/theirs`);
      assert.notEqual(other.status, 0);
      assert.match(other.stderr, /Eventarc Google channel .* is encrypted with .*theirs/);
    });
  });

  it('creates the Firestore database with the key, and stops when an existing one lacks it', () => {
    const create = all.find((c) => starts(c, 'gcloud', 'firestore', 'databases', 'create'));
    assert.equal(flagValue(create ?? [], '--kms-key-name'), KEY);
    const check = keyCheck('cmekConfig.kmsKeyName');
    const script = renderPlan([], [check]);
    withFakeGcloud(PRINT_DESCRIBED, (runScript) => {
      const run = (described: string) => runScript(script, { DESCRIBED: described });
      assert.equal(run(KEY).status, 0);
      const unkeyed = run('');
      assert.notEqual(unkeyed.status, 0);
      assert.match(unkeyed.stderr, /not encrypted with --kms-key/);
    });
  });

  it('grants the encrypter/decrypter role on the key alone to each service agent that uses it, before any use', () => {
    const grants = all.filter((c) => starts(c, 'gcloud', 'kms', 'keys', 'add-iam-policy-binding'));
    assert.deepEqual(
      grants.map((c) => flagValue(c, '--member')).sort(),
      KEY_USERS.map((u) => `serviceAccount:${u.email}`).sort(),
    );
    for (const c of grants) {
      assert.equal(c[4], KEY);
      assert.equal(flagValue(c, '--role'), KMS_ROLE);
    }
    const members = grants.map((c) => flagValue(c, '--member') ?? '');
    for (const agent of [
      'bq-${PROJECT_NUMBER}@bigquery-encryption.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@gcp-sa-firestore.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@gcf-admin-robot.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@gcp-sa-artifactregistry.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@serverless-robot-prod.iam.gserviceaccount.com',
      'service-${PROJECT_NUMBER}@gcp-sa-eventarc.iam.gserviceaccount.com',
    ]) {
      assert.ok(members.includes(`serviceAccount:${agent}`), agent);
    }
    const lastGrant = keyed.plan.steps.findLastIndex((s) =>
      commandsOf(s).some((c) => starts(c, 'gcloud', 'kms', 'keys', 'add-iam-policy-binding')),
    );
    const firstUse = keyed.plan.steps.findIndex((s) =>
      commandsOf(s).some((c) => c.some((a) => a.startsWith('--default_kms_key='))),
    );
    assert.ok(lastGrant < firstUse, `grants end at ${lastGrant}, first use at ${firstUse}`);
    assert.ok(all.some((c) => c.includes('cloudkms.googleapis.com')));
    assert.deepEqual(planViolations(keyed.plan.steps, keyed.options), []);
    assert.deepEqual(kmsCoverageViolations(keyed.plan.steps, keyed.options, datasets), []);
  });

  it('check fails on a topic, function, dataset or database without the key, or a missing agent grant', () => {
    const drop = (c: Command, flag: string): Command => c.filter((a) => !a.startsWith(`${flag}=`));
    const altered = (flag: string, match: (c: Command) => boolean): Step[] =>
      keyed.plan.steps.map((s) =>
        s.kind === 'run' && match(s.command)
          ? { ...s, command: drop(s.command, flag) }
          : s.kind === 'ensure'
            ? {
                ...s,
                ...(s.absent && match(s.absent) ? { absent: drop(s.absent, flag) } : {}),
                ...(s.present && match(s.present) ? { present: drop(s.present, flag) } : {}),
              }
            : s,
      );
    const o = keyed.options;
    const topic = altered('--topic-encryption-key', (c) => starts(c, 'gcloud', 'pubsub', 'topics'));
    assert.match(
      planViolations(topic, o).join('\n'),
      /topics create booking-events without the key/,
    );
    const fn = altered('--kms-key', (c) => starts(c, 'gcloud', 'functions', 'deploy'));
    assert.match(
      planViolations(fn, o).join('\n'),
      /function offvia-ingest-booking deployed without the key/,
    );
    const db = altered('--kms-key-name', (c) =>
      starts(c, 'gcloud', 'firestore', 'databases', 'create'),
    );
    assert.match(
      planViolations(db, o).join('\n'),
      /Firestore database offvia created without the key/,
    );
    const ds = altered('--default_kms_key', (c) => c[0] === 'bq');
    assert.match(
      planViolations(ds, o).join('\n'),
      /dataset offvia-test:offvia_silver without the default key/,
    );
    assert.match(
      kmsCoverageViolations(ds, o, datasets).join('\n'),
      /dataset offvia_gold gets no default key/,
    );
    const noBq = keyed.plan.steps.filter(
      (s) =>
        !(
          s.kind === 'run' &&
          (s.command.find((a) => a.startsWith('--member=')) ?? '').includes('bigquery-encryption')
        ),
    );
    assert.match(
      kmsCoverageViolations(noBq, o, datasets).join('\n'),
      /bq-\$\{PROJECT_NUMBER\}@bigquery-encryption.iam.gserviceaccount.com \(BigQuery datasets\) is not granted/,
    );
  });

  it('without --kms-key, no command of the deploy or teardown plan mentions KMS, and the check says so', () => {
    const text = renderPlan(plain.plan.header, plain.plan.steps);
    assert.doesNotMatch(
      commands(plain.plan).flat().join('\n'),
      /kms|encryption-key|crypto-key|cloudkms|docker-repository/i,
    );
    assert.match(text, /encryption: Google-managed \(no --kms-key\)/);
    assert.doesNotMatch(
      commands(render('teardown', '--delete-data').plan).flat().join('\n'),
      /kms/i,
    );
    const stray: Step = {
      kind: 'run',
      title: 'stray',
      command: ['gcloud', 'pubsub', 'topics', 'create', 'x', `--topic-encryption-key=${KEY}`],
    };
    assert.match(
      planViolations([...plain.plan.steps, stray], plain.options).join('\n'),
      /mentions KMS without --kms-key/,
    );
  });

  it('refuses a malformed key, a key version, or a key whose location does not fit, with one line', () => {
    const cases: [string[], RegExp][] = [
      [
        ['--kms-key', 'data'],
        /^--kms-key: expected projects\/P\/locations\/L\/keyRings\/R\/cryptoKeys\/K, got "data"$/,
      ],
      [['--kms-key', `${KEY}/cryptoKeyVersions/1`], /^--kms-key: expected projects\//],
      [
        ['--kms-key', 'projects/kms-project/locations/us/keyRings/r/cryptoKeys/k'],
        /^--kms-key: the key is in us, but Cloud Run functions need a key in their region europe-west1$/,
      ],
      [
        ['--kms-key', KEY, '--bq-location', 'EU'],
        /^--kms-key: the key is in europe-west1, but datasets in --bq-location EU need a key in europe$/,
      ],
      [
        ['--kms-key', KEY, '--firestore-location', 'eur3'],
        /^--kms-key: the key is in europe-west1, but a Firestore database in eur3 needs a key in europe$/,
      ],
    ];
    for (const [flags, expected] of cases) {
      const message = refusal(...flags);
      assert.match(message, expected, flags.join(' '));
      assert.doesNotMatch(message, /\n/);
    }
    assert.deepEqual(parseKmsKey(KEY), {
      name: KEY,
      project: 'kms-project',
      location: R,
      keyRing: 'offvia',
      key: 'data',
    });
  });

  it('deploy.sh answers a malformed key with one line and exit 2, no stack trace', function () {
    // A child process through tsx: seconds on a loaded machine.
    this.timeout(60_000);
    const result = spawnSync(
      'npx',
      [
        'tsx',
        'deploy/gcloud/cli.ts',
        'deploy',
        ...BASE,
        '--kms-key',
        'nope',
        '--out-dir',
        tmpdir(),
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    assert.equal(result.status, 2);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /^--kms-key: expected /);
  });
});

describe('gcloud plan: a redeploy that replaces the trigger subscription', () => {
  const { plan } = render('deploy');
  const seekStep = plan.steps.find((s) =>
    commandsOf(s).some((c) => starts(c, 'gcloud', 'pubsub', 'subscriptions', 'seek')),
  );
  const captures = plan.steps.filter(
    (s) => s.kind === 'capture' && /DEPLOY_STARTED_AT|PREVIOUS_SUBSCRIPTION/.test(s.variable),
  );

  it('records the subscription and the time before the deploy, and seeks a new one back to that time', () => {
    const deployIndex = plan.steps.findIndex((s) =>
      commandsOf(s).some((c) =>
        starts(c, 'gcloud', 'functions', 'deploy', 'offvia-ingest-booking'),
      ),
    );
    assert.equal(captures.length, 2);
    for (const c of captures) assert.ok(plan.steps.indexOf(c) < deployIndex);
    assert.ok(seekStep?.kind === 'ensure' && seekStep.absent);
    assert.ok(plan.steps.indexOf(seekStep) > deployIndex);
    assert.deepEqual(seekStep.absent.slice(0, 5), [
      'gcloud',
      'pubsub',
      'subscriptions',
      'seek',
      '${INGEST_BOOKING_SUBSCRIPTION}',
    ]);
    assert.equal(flagValue(seekStep.absent, '--time'), '${INGEST_BOOKING_DEPLOY_STARTED_AT}');
  });

  it('seeks only when the subscription changed (fake gcloud)', () => {
    assert.ok(seekStep?.kind === 'ensure');
    // The fake gcloud logs each call's arguments to `calls` beside it.
    withFakeGcloud('echo "$*" >> "$(dirname "$0")/calls"', (runScript, bin) => {
      const log = path.join(bin, 'calls');
      const set = (variable: string, value: string): Step => ({
        kind: 'capture',
        title: variable,
        variable,
        command: ['echo', value],
      });
      const run = (previous: string, current: string): string => {
        rmSync(log, { force: true });
        const script = renderPlan(
          [],
          [
            set('INGEST_BOOKING_DEPLOY_STARTED_AT', '2026-12-01T21:00:00Z'),
            set('INGEST_BOOKING_PREVIOUS_SUBSCRIPTION', previous),
            set('INGEST_BOOKING_SUBSCRIPTION', current),
            seekStep,
          ],
        );
        const result = runScript(script);
        assert.equal(result.status, 0, result.stderr);
        return spawnSync('cat', [log], { encoding: 'utf8' }).stdout;
      };
      const sub = `projects/${P}/subscriptions/eventarc-a`;
      assert.equal(run(sub, sub), '');
      assert.match(
        run(sub, `projects/${P}/subscriptions/eventarc-b`),
        /^pubsub subscriptions seek projects\/offvia-test\/subscriptions\/eventarc-b --time=2026-12-01T21:00:00Z/,
      );
      assert.match(run('none', sub), /subscriptions seek .*eventarc-a/);
    });
  });
});
