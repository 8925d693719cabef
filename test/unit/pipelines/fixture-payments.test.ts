// A third pipeline as a fixture (test/fixtures/pipelines/payments, registered only through
// OFFVIA_EXTRA_PIPELINE_DIRS): its folder alone makes it a pipeline. The type check covers its code (tsconfig
// includes test/; its samples are checked in samples.test.ts); here the registry's checks accept it, and everything
// the local stack and the configuration reference derive from the registry includes it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pipelineDdlFiles } from '../../../deploy/local/apply-sql';
import { bronzeRoutes } from '../../../deploy/local/bronze-standin';
import {
  localFunctionPorts,
  localFunctions,
  localPubSubPlan,
} from '../../../deploy/local/resources';
import { localSchedules } from '../../../deploy/local/scheduler';
import { SCHEDULES } from '../../../deploy/schedules';
import { renderConfigReference } from '../../../scripts/config-reference';
import { configVarGroups } from '../../../shared/config/registry';
import { registryProblems } from '../../../shared/pipeline/registry-checks';
import { PIPELINES, discoverPipelines, pipelineDirs } from '../../../shared/pipelines';

const ROOT = path.resolve(__dirname, '../../..');
const FIXTURES = 'test/fixtures/pipelines';
const WITH_FIXTURE = discoverPipelines(pipelineDirs({ OFFVIA_EXTRA_PIPELINE_DIRS: FIXTURES }));
const payments = WITH_FIXTURE.find((p) => p.name === 'payments');

describe('a third pipeline from its folder alone (the payments fixture)', () => {
  it('is registered only where OFFVIA_EXTRA_PIPELINE_DIRS names its folder, after the registered ones', () => {
    assert.ok(payments, 'payments not discovered');
    assert.ok(!PIPELINES.some((p) => p.name === 'payments'));
    assert.deepEqual(
      WITH_FIXTURE.map((p) => p.name),
      [...PIPELINES.map((p) => p.name), 'payments'].sort((a, b) =>
        a === 'booking' ? -1 : b === 'booking' ? 1 : a.localeCompare(b),
      ),
    );
  });

  it("passes the registry's checks beside the registered pipelines", () => {
    assert.deepEqual(registryProblems(WITH_FIXTURE), []);
  });

  // That its DDL creates every table it names, and only those: test/unit/pipeline/registry.test.ts.
  it('applies its own DDL files on the stack', () => {
    assert.ok(payments);
    assert.deepEqual(
      pipelineDdlFiles(WITH_FIXTURE, 'payments').map((f) => path.relative(ROOT, f)),
      [...payments.tables.ddlFiles],
    );
  });

  it('gets its local functions, ports, Pub/Sub, schedule and stack list from the registry', function () {
    this.timeout(60_000);
    const ports = localFunctionPorts(WITH_FIXTURE);
    const ingest = ports.get('ingestPayments');
    const fire = ports.get('firePaymentsWindows');
    assert.ok(ingest !== undefined && fire !== undefined);
    assert.equal(fire, ingest + 1);
    assert.ok(ingest >= 20_000 && fire < 32_768);
    // Adding it moves no other function's port.
    for (const [entryPoint, port] of localFunctionPorts(PIPELINES)) {
      assert.equal(ports.get(entryPoint), port, entryPoint);
    }
    assert.equal(new Set(ports.values()).size, ports.size);
    assert.ok(
      localFunctions(WITH_FIXTURE).some(
        (f) => f.entryPoint === 'ingestPayments' && f.signature === 'cloudevent',
      ),
    );
    assert.ok(payments);
    const plan = localPubSubPlan(payments, 'p', ingest);
    assert.equal(
      plan.ingest.options.pushConfig?.pushEndpoint,
      `http://127.0.0.1:${ingest}/projects/p/topics/payments-events`,
    );
    assert.deepEqual(
      plan.pullSubscriptions.map((s) => s.name),
      ['payments-events-dlq-hold'],
    );
    assert.ok(
      localSchedules(SCHEDULES, WITH_FIXTURE).some((s) => s.functionName === 'firePaymentsWindows'),
    );
    assert.ok(!bronzeRoutes(WITH_FIXTURE).some((r) => r.pipeline === 'payments'));
    // What stack.sh runs at `up` with the variable set.
    const lines = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'deploy/local/stack-functions.ts'],
      {
        cwd: ROOT,
        env: { ...process.env, OFFVIA_EXTRA_PIPELINE_DIRS: FIXTURES },
        encoding: 'utf8',
      },
    );
    assert.match(lines, new RegExp(`^ingestPayments\\|cloudevent\\|${ingest}$`, 'm'));
    assert.match(lines, new RegExp(`^firePaymentsWindows\\|http\\|${fire}$`, 'm'));
  });

  it('puts its own variables in the configuration reference', () => {
    const groups = configVarGroups(WITH_FIXTURE);
    assert.ok(groups.some((g) => g.vars.some((v) => v.name === 'OFFVIA_PAYMENTS_MAX_AMOUNT')));
    assert.match(renderConfigReference(groups), /\| `OFFVIA_PAYMENTS_MAX_AMOUNT` \| `1000000` \|/);
    assert.ok(payments?.config);
    assert.throws(
      () => payments.config?.load({ OFFVIA_PAYMENTS_MAX_AMOUNT: '0' }),
      /OFFVIA_PAYMENTS_MAX_AMOUNT/,
    );
  });
});
