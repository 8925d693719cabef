// What `gcloud functions deploy --source=.` uploads builds and runs: the files .gcloudignore lets through are
// copied to an empty folder, installed (`npm ci`), built (`npm run gcp-build`), stripped of devDependencies, and
// every registered function is loaded (Functions Framework testing API) and served with the deployed
// environment (cold-start configuration checks included). No Google Cloud call: the emulator variables point at
// a closed port and the metadata server is off.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../../deploy/gcloud/cli';
import { functionEnv } from '../../../deploy/gcloud/env';
import { pipelineFunctions } from '../../../shared/pipeline/registry-checks';
import { PIPELINES } from '../../../shared/pipelines';
import { filesForUpload } from '../../../deploy/gcloud/upload';

const NO_CLOUD: NodeJS.ProcessEnv = {
  BIGQUERY_EMULATOR_HOST: '127.0.0.1:9',
  FIRESTORE_EMULATOR_HOST: '127.0.0.1:9',
  PUBSUB_EMULATOR_HOST: '127.0.0.1:9',
  METADATA_SERVER_DETECTION: 'none',
  GOOGLE_CLOUD_PROJECT: 'offvia-test',
};
const QUIET_GCLOUD: NodeJS.ProcessEnv = {
  CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
  CLOUDSDK_CORE_DISABLE_USAGE_REPORTING: 'true',
  CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK: 'true',
};

function run(command: string, args: string[], cwd: string, timeoutMs: number): string {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: {
      ...process.env,
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
    },
  });
  assert.equal(
    result.status,
    0,
    `${command} ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`,
  );
  return result.stdout;
}

/** Starts the Functions Framework on `target` and resolves with its output once it serves (or exits). */
function serve(
  dir: string,
  target: string,
  env: NodeJS.ProcessEnv,
): Promise<{ output: string; served: boolean }> {
  const pkg = JSON.parse(
    readFileSync(
      path.join(dir, 'node_modules', '@google-cloud', 'functions-framework', 'package.json'),
      'utf8',
    ),
  ) as { bin: Record<string, string> };
  const bin = path.join(
    dir,
    'node_modules',
    '@google-cloud',
    'functions-framework',
    pkg.bin['functions-framework'] ?? '',
  );
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin], {
      cwd: dir,
      env: { ...process.env, ...env, FUNCTION_TARGET: target, PORT: '0', NODE_ENV: 'test' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${target} did not start in 30 s:\n${output}`));
    }, 30_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (/Signature type: \w+/.test(output)) {
        clearTimeout(timer);
        child.kill('SIGTERM');
        resolve({ output, served: true });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve({ output, served: /Signature type: \w+/.test(output) });
    });
  });
}

describe('the uploaded source builds and loads every function', function () {
  this.timeout(400_000);
  let dir: string;
  let files: string[];
  /** Every registered pipeline's functions, as the deploy plan deploys them: ingest is a CloudEvent function. */
  const registered = PIPELINES.flatMap(pipelineFunctions).map((f) => ({
    entryPoint: f.entryPoint,
    signatureType: f.role === 'ingest' ? 'cloudevent' : 'http',
  }));

  before(function () {
    files = filesForUpload(REPO_ROOT);
    dir = mkdtempSync(path.join(tmpdir(), 'offvia-gcloud-source-'));
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('uploads the build inputs only, exactly the files gcloud itself would upload', function () {
    for (const needed of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'functions/index.ts',
    ]) {
      assert.ok(files.includes(needed), needed);
    }
    for (const file of files) {
      assert.match(
        file,
        /^(functions|shared)\/|^(package|package-lock|tsconfig|tsconfig\.build)\.json$/,
        file,
      );
    }
    const gcloud = spawnSync('gcloud', ['meta', 'list-files-for-upload', REPO_ROOT], {
      encoding: 'utf8',
      env: { ...process.env, ...QUIET_GCLOUD },
      timeout: 60_000,
    });
    if (gcloud.status !== 0) this.skip(); // no Google Cloud CLI here: the ignore-rules check above stands alone
    assert.deepEqual(gcloud.stdout.split('\n').filter(Boolean).sort(), files);
  });

  it('installs with npm ci and builds with npm run gcp-build in a folder holding only those files', () => {
    for (const file of files) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      copyFileSync(path.join(REPO_ROOT, file), path.join(dir, file));
    }
    run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], dir, 300_000);
    run('npm', ['run', 'gcp-build'], dir, 120_000);
    // Run without devDependencies, as a production image may: the functions must not need them.
    run(
      'npm',
      ['prune', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'],
      dir,
      120_000,
    );
    assert.ok(!existsSync(path.join(dir, 'node_modules', 'mocha')), 'devDependencies pruned');
    const main = (
      JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { main: string }
    ).main;
    assert.ok(existsSync(path.join(dir, main)), `package.json main ${main} was built`);
  });

  it('registers every entry point, as the Functions Framework testing API sees it', () => {
    const names = JSON.stringify(registered.map((f) => f.entryPoint));
    const probe = `
      const main = require(require('path').resolve(require('./package.json').main));
      const { getFunction } = require('@google-cloud/functions-framework/testing');
      process.stdout.write(JSON.stringify(${names}.map((n) => [n, typeof getFunction(n)])));`;
    const result = spawnSync(process.execPath, ['-e', probe], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, ...NO_CLOUD },
      timeout: 60_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(
      JSON.parse(result.stdout),
      registered.map((f) => [f.entryPoint, 'function']),
    );
  });

  it('serves each function with its signature type, after the cold-start configuration check', async () => {
    const { vars } = functionEnv('offvia-test', {});
    const deployed: NodeJS.ProcessEnv = { ...Object.fromEntries(vars), ...NO_CLOUD };
    for (const fn of registered) {
      const { output, served } = await serve(dir, fn.entryPoint, deployed);
      assert.ok(served, `${fn.entryPoint} did not start:\n${output}`);
      assert.match(output, new RegExp(`Function: ${fn.entryPoint}\\b`));
      assert.match(output, new RegExp(`Signature type: ${fn.signatureType}\\b`));
      assert.doesNotMatch(output, /ConfigError|configuration error/i);
      // ingestBooking validates its configuration at cold start and logs it (shared/logging/logs.ts configLoaded).
      if (fn.entryPoint === 'ingestBooking') assert.match(output, /configuration loaded/);
    }
  });
});
