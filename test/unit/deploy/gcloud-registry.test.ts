// Reading the registered functions from functions/index.ts without running it (deploy/gcloud/registry.ts), and
// the functions' environment (deploy/gcloud/env.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../../deploy/gcloud/cli';
import { functionEnv, setEnvVarsValue } from '../../../deploy/gcloud/env';
import { registeredFunctions } from '../../../deploy/gcloud/registry';

describe('registered functions', () => {
  it('reads functions/index.ts: ingestBooking (CloudEvent) and the HTTP schemaSweep', () => {
    const found = registeredFunctions(
      readFileSync(path.join(REPO_ROOT, 'functions', 'index.ts'), 'utf8'),
    );
    assert.deepEqual(found[0], { entryPoint: 'ingestBooking', signatureType: 'cloudevent' });
    assert.ok(
      found.some((f) => f.entryPoint === 'schemaSweep' && f.signatureType === 'http'),
      "found.some((f) => f.entryPoint === 'schemaSweep' && f.signatureType === 'http')",
    );
  });

  it('understands namespace and named imports, aliases and type arguments', () => {
    const source = `
      import * as ff from '@google-cloud/functions-framework';
      import { http as web, cloudEvent } from '@google-cloud/functions-framework';
      import { http } from './not-the-framework';
      ff.cloudEvent<Data<Nested>>(
        'one', async () => {});
      web("two", (req, res) => res.send('ok'));
      cloudEvent(\`three\`, () => undefined);
      http('not-registered', () => undefined);
      other.http('neither', () => undefined);`;
    assert.deepEqual(registeredFunctions(source), [
      { entryPoint: 'one', signatureType: 'cloudevent' },
      { entryPoint: 'two', signatureType: 'http' },
      { entryPoint: 'three', signatureType: 'cloudevent' },
    ]);
  });

  it('refuses names it cannot know without running the code, and duplicates', () => {
    const head = "import * as functions from '@google-cloud/functions-framework';\n";
    assert.throws(
      () => registeredFunctions(`${head}functions.http(name, h);`),
      /index\.ts:2: .*string literal/,
    );
    assert.throws(
      () => registeredFunctions(`${head}functions.http('a', h);\nfunctions.cloudEvent('a', h);`),
      /a is registered twice/,
    );
  });
});

describe('function environment', () => {
  it('sets OFFVIA_PROJECT_ID and the defaults, sorted, and parses them with the cold-start loaders', () => {
    const { vars, config } = functionEnv('offvia-test', { OFFVIA_SCHEMA_RETRY_MINUTES: '60' });
    const names = vars.map(([k]) => k);
    assert.deepEqual(names, [...names].sort());
    assert.ok(
      vars.some(([k, v]) => k === 'OFFVIA_PROJECT_ID' && v === 'offvia-test'),
      "vars.some(([k, v]) => k === 'OFFVIA_PROJECT_ID' && v === 'offvia-test')",
    );
    assert.equal(config.drift.retryMinutes, 60);
    assert.equal(config.ingest.projectId, 'offvia-test');
    assert.throws(() => functionEnv('p-roject', { OFFVIA_PROJECT_ID: 'x' }), /use --project/);
    assert.throws(
      () => functionEnv('p-roject', { OFFVIA_SCHEMA_MODE: 'maybe' }),
      /OFFVIA_SCHEMA_MODE/,
    );
  });

  it('switches --set-env-vars to an alternate delimiter when a value holds a comma', () => {
    assert.equal(
      setEnvVarsValue([
        ['A', '1'],
        ['B', '2'],
      ]),
      'A=1,B=2',
    );
    assert.equal(
      setEnvVarsValue([
        ['A', 'x,y'],
        ['B', '2'],
      ]),
      '^@^A=x,y@B=2',
    );
    assert.equal(setEnvVarsValue([['A', 'x,y@z']]), '^;^A=x,y@z');
  });
});
