// The offvia command line: help, usage errors, exit codes and one-line failures, without a running stack.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main } from '../../../shared/ops/cli';
import type { OpsContext } from '../../../shared/ops/context';
import { EXIT } from '../../../shared/ops/errors';

/** Runs offvia in-process and captures its output; `connect` fails the test unless a test allows it. */
async function run(argv: string[], connect?: () => OpsContext) {
  const out: string[] = [];
  const err: string[] = [];
  let connected = false;
  const code = await main(argv, {
    io: { out: (t) => out.push(t), err: (t) => err.push(t) },
    now: () => Date.UTC(2026, 11, 1),
    connect: () => {
      connected = true;
      if (!connect) throw new Error('connect must not be called');
      return connect();
    },
  });
  return { code, out: out.join(''), err: err.join(''), connected };
}

const oneLine = (text: string) => text.trim().split('\n').length === 1;

describe('offvia: command line', () => {
  it('--help lists every command and exits 0; each command has its own --help', async () => {
    const top = await run(['--help']);
    assert.equal(top.code, EXIT.ok);
    for (const command of ['status', 'trace', 'quarantine', 'bad-data', 'query']) {
      assert.match(top.out, new RegExp(`\\n  ${command}\\b`), command);
    }
    for (const argv of [
      ['status', '--help'],
      ['trace', '--help'],
      ['quarantine', 'reprocess', '--help'],
      ['bad-data', 'redrive', '--help'],
    ]) {
      const r = await run(argv);
      assert.equal(r.code, EXIT.ok, argv.join(' '));
      assert.match(r.out, /--json/, `${argv.join(' ')} shows the global --json`);
    }
  });

  it('no command (offvia, offvia quarantine) shows the help on stderr and is a usage error, exit 2', async () => {
    for (const argv of [[], ['quarantine'], ['bad-data']]) {
      const r = await run(argv);
      assert.equal(r.code, EXIT.usage, argv.join(' '));
      assert.match(r.err, /Usage: offvia/);
    }
  });

  const usage: [string[], RegExp][] = [
    [['status', '--bogus'], /unknown option '--bogus'/],
    [['stat'], /unknown command 'stat'.*Did you mean status/],
    [['status', '--since', '5x'], /--since: expected a duration/],
    [['trace'], /missing required argument 'id'/],
    [
      ['quarantine', 'reprocess', '--upper', 'origin'],
      /select rows with --stage, --reason, --since, --until or --ids, or pass --all/,
    ],
    [['quarantine', 'reprocess', '--stage', 'NOPE'], /unknown stage NOPE/],
    // An empty list names no row: it must not select every open row without --all.
    [['quarantine', 'reprocess', '--ids', '', '--upper', 'origin'], /--ids: no value given/],
    [['quarantine', 'reprocess', '--ids', ' , '], /--ids: no value given/],
    [['quarantine', 'reprocess', '--stage', ''], /--stage: no value given/],
    [['bad-data', 'redrive', '--ids', ','], /--ids: no value given/],
    [['bad-data', 'redrive', '--target', ''], /--target: no value given/],
    [['quarantine', 'reprocess', '--all', '--set', 'x'], /--set: expected FIELD=VALUE/],
    [['quarantine', 'reprocess', '--all', '--limit', '0'], /--limit: expected an integer/],
    [['quarantine', 'reprocess', '--reason', '('], /--reason: not a regular expression/],
    [['bad-data', 'redrive', '--since', 'yesterday'], /--since: expected a duration/],
    // An inverted range would select nothing and report "0 rows" as if none matched.
    [
      ['quarantine', 'reprocess', '--since', '1h', '--until', '2h'],
      /--until \(.*\) must be after --since/,
    ],
    [
      ['bad-data', 'redrive', '--since', '2h', '--until', '2h'],
      /--until \(.*\) must be after --since/,
    ],
    [
      ['bad-data', 'redrive', '--all', '--fix-module', 'does-not-exist.js'],
      /--fix-module: cannot load/,
    ],
  ];
  for (const [argv, message] of usage) {
    it(`usage error, one line, exit 2, no connection: offvia ${argv.join(' ')}`, async () => {
      const r = await run(argv);
      assert.equal(r.code, EXIT.usage);
      assert.match(r.err, message);
      assert.ok(oneLine(r.err), `one line: ${r.err}`);
      assert.match(r.err, /^offvia: /);
      assert.equal(r.out, '');
      assert.equal(r.connected, false);
    });
  }

  it('without a stack or --project: one line naming both ways out, exit 2', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(
      ['status', '--stack-dir', path.join(os.tmpdir(), 'offvia-no-such-stack')],
      {
        io: { out: (t) => out.push(t), err: (t) => err.push(t) },
      },
    );
    assert.equal(code, EXIT.usage);
    assert.match(
      err.join(''),
      /no local stack .* and no --project: start the stack with 'npm run stack:up' or pass --project ID/,
    );
    assert.ok(oneLine(err.join('')));
  });

  it('an unreachable emulator: one line naming it and the stack status command, exit 1', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'offvia-dead-stack-'));
    // Port 1 on the loopback: nothing listens there, the connection is refused at once.
    writeFileSync(
      path.join(dir, 'env'),
      [
        'export BIGQUERY_EMULATOR_HOST=http://127.0.0.1:1/bigquery/v2',
        'export FIRESTORE_EMULATOR_HOST=127.0.0.1:1',
        'export OFFVIA_PROJECT_ID=offvia-local',
        'export METADATA_SERVER_DETECTION=none',
      ].join('\n'),
    );
    const saved = { ...process.env };
    const err: string[] = [];
    try {
      const code = await main(['trace', 'BK-1', '--stack-dir', dir], {
        io: { out: () => undefined, err: (t) => err.push(t) },
      });
      assert.equal(code, EXIT.failure);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
    const line = err.join('');
    assert.ok(oneLine(line), line);
    assert.match(
      line,
      /^offvia: cannot reach the BigQuery emulator \(http:\/\/127\.0\.0\.1:1\/bigquery\/v2\).*ECONNREFUSED.*stack\.sh status/,
    );
  });
});
