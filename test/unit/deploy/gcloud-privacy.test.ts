// --passenger-id-hmac-secret on the rendered plan: the key reaches ingestBooking only, as a pinned Secret Manager
// version (never a plain environment variable), its account alone may read that one secret, and without the flag no
// command mentions a secret.
import assert from 'node:assert/strict';
import { parseCli, planFor } from '../../../deploy/gcloud/cli';
import type { Plan } from '../../../deploy/gcloud/options';
import { planViolations } from '../../../deploy/gcloud/plan-checks';
import { type Command, commandsOf, flagValue, type Step } from '../../../deploy/gcloud/steps';

const P = 'offvia-test';
const BASE = ['--project', P, '--region', 'europe-west1'];
const render = (...flags: string[]) => {
  const args = parseCli(['deploy', ...BASE, ...flags]);
  return { plan: planFor(args), options: args.options };
};
const commands = (plan: Plan): Command[] => plan.steps.flatMap(commandsOf);
const deploys = (plan: Plan): Command[] =>
  commands(plan).filter((c) => c[0] === 'gcloud' && c[1] === 'functions' && c[2] === 'deploy');

describe('gcloud plan: the passenger_id key (--passenger-id-hmac-secret)', () => {
  const keyed = render('--passenger-id-hmac-secret', 'offvia-passenger-id-key:3');
  const plain = render();

  it('mounts the pinned version into ingestBooking only, with OFFVIA_PASSENGER_ID_MODE=hmac-sha256', () => {
    const fns = deploys(keyed.plan);
    const ingest = fns.find((c) => c[3] === 'offvia-ingest-booking') ?? [];
    assert.equal(
      flagValue(ingest, '--set-secrets'),
      'OFFVIA_PASSENGER_ID_HMAC_KEY=offvia-passenger-id-key:3',
    );
    assert.match(flagValue(ingest, '--set-env-vars') ?? '', /OFFVIA_PASSENGER_ID_MODE=hmac-sha256/);
    for (const c of fns) {
      assert.doesNotMatch(flagValue(c, '--set-env-vars') ?? '', /HMAC_KEY/);
      if (c !== ingest) {
        assert.equal(flagValue(c, '--set-secrets'), undefined);
        assert.ok(c.includes('--clear-secrets'), `${c[3] ?? ''} clears secrets`);
      }
    }
    // The same full-name form is accepted for this project.
    const full = render(
      '--passenger-id-hmac-secret',
      `projects/${P}/secrets/offvia-passenger-id-key/versions/3`,
    );
    assert.deepEqual(deploys(full.plan), fns);
  });

  it('checks the version exists and grants secretAccessor on that secret only, to ingestBooking only', () => {
    const all = commands(keyed.plan);
    const grants = all.filter((c) => c.includes('--role=roles/secretmanager.secretAccessor'));
    assert.equal(grants.length, 1);
    assert.deepEqual(grants[0]?.slice(0, 5), [
      'gcloud',
      'secrets',
      'add-iam-policy-binding',
      'offvia-passenger-id-key',
      `--member=serviceAccount:offvia-ingest@${P}.iam.gserviceaccount.com`,
    ]);
    const exists = keyed.plan.steps.find(
      (s) =>
        s.kind === 'ensure' &&
        s.probe.command.join(' ').startsWith('gcloud secrets versions describe 3'),
    );
    assert.ok(exists?.kind === 'ensure' && exists.probe.kind === 'line');
    assert.equal(exists.probe.line, 'ENABLED');
    assert.ok(all.some((c) => c.includes('secretmanager.googleapis.com')));
    assert.deepEqual(planViolations(keyed.plan.steps, keyed.options), []);
  });

  it('without the flag: no secret anywhere, every function clears secrets, raw mode', () => {
    const text = commands(plain.plan).flat().join('\n');
    assert.doesNotMatch(text, /PASSENGER_ID|secretmanager|set-secrets/);
    for (const c of deploys(plain.plan)) assert.ok(c.includes('--clear-secrets'));
    assert.deepEqual(planViolations(plain.plan.steps, plain.options), []);
  });

  it('refuses latest, a bad name, and the variables through --env, with one line', () => {
    for (const value of [
      'offvia-passenger-id-key:latest',
      'offvia-passenger-id-key',
      'projects/other-project/secrets/k/versions/1',
    ]) {
      assert.throws(
        () => render('--passenger-id-hmac-secret', value),
        (err: Error) =>
          /^--passenger-id-hmac-secret: expected SECRET:VERSION/.test(err.message) &&
          !err.message.includes('\n'),
        value,
      );
    }
    for (const variable of ['OFFVIA_PASSENGER_ID_HMAC_KEY', 'OFFVIA_PASSENGER_ID_MODE']) {
      assert.throws(() => render('--env', `${variable}=x`), /use --passenger-id-hmac-secret/);
    }
  });

  it('check fails on the key in plain env vars, a secret-less ingest deploy, or a project-wide accessor', () => {
    const o = keyed.options;
    const swap = (f: (c: Command) => Command): Step[] =>
      keyed.plan.steps.map((s) =>
        s.kind === 'ensure' && s.absent
          ? { ...s, absent: f(s.absent) }
          : s.kind === 'run'
            ? { ...s, command: f(s.command) }
            : s,
      );
    const leaked = swap((c) =>
      c.map((a) => (a.startsWith('--set-env-vars=') ? `${a},OFFVIA_PASSENGER_ID_HMAC_KEY=abc` : a)),
    );
    assert.match(
      planViolations(leaked, o).join('\n'),
      /puts the passenger_id key in plain environment variables/,
    );
    const noSecret = swap((c) => c.filter((a) => !a.startsWith('--set-secrets=')));
    assert.match(
      planViolations(noSecret, o).join('\n'),
      /offvia-ingest-booking deployed without the passenger_id key secret/,
    );
    const wide: Step = {
      kind: 'run',
      title: 'wide',
      command: [
        'gcloud',
        'projects',
        'add-iam-policy-binding',
        P,
        `--member=serviceAccount:offvia-ingest@${P}.iam.gserviceaccount.com`,
        '--role=roles/secretmanager.secretAccessor',
        '--condition=None',
      ],
    };
    assert.match(
      planViolations([...keyed.plan.steps, wide], o).join('\n'),
      /not on the one secret/,
    );
  });
});
