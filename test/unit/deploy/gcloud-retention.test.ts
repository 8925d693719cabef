// The deploy plan's retention check (deploy/gcloud/plan-checks.ts): Bronze, Silver and gold keep at least the replay
// horizon the docs promise. The rendered plan passes; a plan whose DDL, a later ALTER or a bq flag makes Bronze or
// Silver expire sooner is refused with the numbers, and gold expiring sooner is a warning in the plan's header.
import assert from 'node:assert/strict';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import type { RepoFacts } from '../../../deploy/gcloud/options';
import {
  REPLAY_HORIZON_DAYS,
  retentionFindings,
  retentionsOf,
} from '../../../deploy/gcloud/plan-checks';
import { bq, type Step } from '../../../deploy/gcloud/steps';
import { PIPELINES } from '../../../shared/pipelines';
import { OPTIONS, P, repoFacts } from '../../support/deploy-plans';

const NOW = Date.parse('2026-12-01T00:00:00Z');
const run = (title: string, command: string[]): Step => ({ kind: 'run', title, command });
const query = (title: string, sql: string): Step =>
  run(title, bq(P, 'query', '--use_legacy_sql=false', sql));

/** The repository's facts with booking's DDL file `name` changed by `edit`. */
function factsWith(name: string, edit: (sql: string) => string): RepoFacts {
  const facts = repoFacts();
  const files = facts.pipelineSqlFiles.booking ?? [];
  assert.ok(
    files.some((f) => f.name === name),
    `no booking DDL file ${name}`,
  );
  return {
    ...facts,
    pipelineSqlFiles: {
      ...facts.pipelineSqlFiles,
      booking: files.map((f) => (f.name === name ? { ...f, sql: edit(f.sql) } : f)),
    },
  };
}

describe('gcloud plan: retention against the replay horizon', () => {
  it('passes the rendered plan of every pipeline, and reads the expiry the plan does set', () => {
    const plan = buildDeployPlan(
      { ...OPTIONS, pipelines: PIPELINES.map((p) => p.name) },
      repoFacts(),
    );
    assert.deepEqual(retentionFindings(plan.steps, PIPELINES, NOW), { refusals: [], warnings: [] });
    assert.equal(REPLAY_HORIZON_DAYS, Number.POSITIVE_INFINITY);
    // The quarantine's 90 days (--quarantine-retention-days) are read from the plan's ALTER step.
    const quarantine = retentionsOf(plan.steps, NOW).get('offvia_quarantine.poisoned_events');
    assert.equal(quarantine?.partitionDays, 90);
    assert.match(quarantine?.partitionStep ?? '', /^Partition expiration of/);
    assert.equal(retentionsOf(plan.steps, NOW).get('offvia_bronze.raw_bookings'), undefined);
  });

  it('refuses a Bronze partition expiration in its DDL, naming the table, the days and the step', () => {
    const facts = factsWith('sql/010_bronze_raw_bookings.sql', (sql) =>
      sql.replace(/OPTIONS \(\n/, 'OPTIONS (\n  partition_expiration_days = 30,\n'),
    );
    assert.throws(
      () => buildDeployPlan(OPTIONS, facts),
      (err: Error) => {
        assert.equal(
          err.message,
          'the plan keeps less than the replay horizon:\n  booking Bronze offvia_bronze.raw_bookings: partitions ' +
            'expire after 30 days (step "BigQuery DDL sql/010_bronze_raw_bookings.sql"), shorter than the replay ' +
            'horizon (unlimited, docs/backfill.md#replay-horizon)',
        );
        return true;
      },
    );
  });

  it('refuses a Silver table expiration, and warns (header) for a gold dataset default', () => {
    const steps = [
      query(
        'silver',
        "CREATE TABLE IF NOT EXISTS `p.offvia_silver.fact_bookings` (x INT64)\nOPTIONS (expiration_timestamp = TIMESTAMP '2026-12-11 00:00:00 UTC', description = 'x');",
      ),
      query(
        'gold dataset',
        "CREATE SCHEMA IF NOT EXISTS `p.offvia_gold` OPTIONS (location = 'EU', default_table_expiration_days = 400);",
      ),
    ];
    const found = retentionFindings(steps, PIPELINES, NOW);
    assert.deepEqual(found.refusals, [
      'booking Silver offvia_silver.fact_bookings: the table expires in 10 days (step "silver"), shorter than the ' +
        'replay horizon (unlimited, docs/backfill.md#replay-horizon)',
    ]);
    assert.equal(found.warnings.length, 1, found.warnings.join('\n'));
    assert.match(
      found.warnings[0] ?? '',
      /^booking gold \(\w+\) offvia_gold\.route_panes: the table expires in 400 days \(step "gold dataset"\)/,
    );

    const facts = factsWith('sql/000_datasets.sql', (sql) =>
      sql.replace(/(offvia_gold` OPTIONS \()/, '$1default_partition_expiration_days = 45, '),
    );
    const plan = buildDeployPlan(OPTIONS, facts);
    assert.ok(
      plan.header.some((l) =>
        /^WARNING: booking gold \(\w+\) offvia_gold\.route_panes: partitions expire after 45 days/.test(
          l,
        ),
      ),
      plan.header.join('\n'),
    );
  });

  it('follows the steps in order: a later ALTER or bq flag wins, NULL and 0 clear it', () => {
    const bronze = 'offvia_bronze.raw_bookings';
    const set = query(
      'set',
      `ALTER TABLE \`p.${bronze}\` SET OPTIONS (partition_expiration_days = 3.5);`,
    );
    const clear = query(
      'clear',
      `ALTER TABLE \`p.${bronze}\` SET OPTIONS (partition_expiration_days = NULL);`,
    );
    const flag = run(
      'flag',
      bq(P, 'update', '--time_partitioning_expiration=86400', `${P}:${bronze}`),
    );
    const off = run('off', bq(P, 'update', '--time_partitioning_expiration=0', `${P}:${bronze}`));
    const days = (steps: Step[]) => retentionsOf(steps, NOW).get(bronze)?.partitionDays;
    assert.equal(days([set]), 3.5);
    assert.equal(days([set, clear]), null);
    assert.equal(days([clear, flag]), 1);
    assert.equal(days([flag, off]), null);
    assert.match(
      retentionFindings([clear, flag], PIPELINES, NOW).refusals[0] ?? '',
      /^booking Bronze offvia_bronze\.raw_bookings: partitions expire after 1 days \(step "flag"\)/,
    );
    // A comment naming the option sets nothing.
    assert.equal(
      days([
        query(
          'comment',
          `-- partition_expiration_days = 2\nALTER TABLE \`p.${bronze}\` SET OPTIONS (description = 'x');`,
        ),
      ]),
      undefined,
    );
  });

  it('compares with a finite horizon when one is given', () => {
    const steps = [
      query(
        'bronze',
        'ALTER TABLE `p.offvia_bronze.raw_bookings` SET OPTIONS (partition_expiration_days = 30);',
      ),
    ];
    assert.deepEqual(retentionFindings(steps, PIPELINES, NOW, 30).refusals, []);
    assert.match(
      retentionFindings(steps, PIPELINES, NOW, 31).refusals[0] ?? '',
      /partitions expire after 30 days \(step "bronze"\), shorter than the replay horizon \(31 days,/,
    );
  });
});
