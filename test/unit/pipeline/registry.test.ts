// The registry: every pipeline well-formed, and no two sharing a name, topic, table, function or Firestore root.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { tableName } from '../../../shared/config/env';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import {
  definitionProblems,
  pipelineFirestoreRoots,
  pipelineFunctions,
  pipelinePubSubIds,
  pipelineTables,
  registryProblems,
} from '../../../shared/pipeline/registry-checks';
import {
  PIPELINES,
  discoverPipelines,
  pipelineDirs,
  pipelineNamed,
} from '../../../shared/pipelines';
import { createdObjects } from '../../../deploy/local/apply-sql';

const ROOT = path.resolve(__dirname, '../../..');

describe('pipeline registry', () => {
  const telemetry = pipelineNamed('telemetry');
  const booking = pipelineNamed('booking');

  it('lists every folder of shared/pipelines/ with a definition, booking first, and finds them by name', () => {
    const folders = readdirSync(path.join(ROOT, 'shared/pipelines'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const names = PIPELINES.map((p) => p.name);
    assert.equal(names[0], 'booking');
    for (const folder of folders) assert.ok(names.includes(folder), folder);
    assert.ok(names.includes('telemetry'));
    assert.throws(
      () => pipelineNamed('weather'),
      new RegExp(`no pipeline "weather" \\(registered: ${names.join(', ')}\\)`),
    );
  });

  it('refuses a folder whose definition module exports no definition, or one named otherwise', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'offvia-registry-'));
    try {
      mkdirSync(path.join(dir, 'empty'));
      writeFileSync(path.join(dir, 'empty', 'definition.ts'), 'export const NOTHING = 1;\n');
      assert.throws(
        () => discoverPipelines([dir]),
        /empty.definition must export exactly one pipeline definition named "empty"/,
      );
      rmSync(path.join(dir, 'empty'), { recursive: true });
      mkdirSync(path.join(dir, 'renamed'));
      writeFileSync(
        path.join(dir, 'renamed', 'definition.ts'),
        `export { TELEMETRY_PIPELINE } from ${JSON.stringify(path.join(ROOT, 'shared/pipelines/telemetry/definition'))};\n`,
      );
      assert.throws(() => discoverPipelines([dir]), /found: \["telemetry"\]/);
      // A folder without a definition module is not a pipeline (a helper folder).
      rmSync(path.join(dir, 'renamed'), { recursive: true });
      mkdirSync(path.join(dir, 'helpers'));
      assert.deepEqual(discoverPipelines([dir]), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has no problem: names follow their services’ rules and nothing is claimed twice', () => {
    assert.deepEqual(registryProblems(PIPELINES), []);
  });

  it('gives the two pipelines disjoint topics, subscriptions, tables, functions and Firestore roots', () => {
    const disjoint = <T>(f: (p: AnyPipelineDefinition) => T[], key: (t: T) => string) => {
      const a = new Set(f(booking).map(key));
      const shared = f(telemetry)
        .map(key)
        .filter((k) => a.has(k));
      assert.deepEqual(shared, []);
      assert.ok(a.size > 0);
    };
    disjoint(pipelinePubSubIds, (x) => x.id);
    disjoint(pipelineTables, (x) => x.table);
    disjoint(pipelineFunctions, (x) => x.entryPoint);
    disjoint(pipelineFunctions, (x) => x.baseName);
    disjoint(pipelineFirestoreRoots, (x) => x);
    disjoint(
      (p) => [...p.aggregations],
      (a) => a.name,
    );
  });

  it('finds a topic, a table, a function, a Firestore root and an aggregation claimed by two pipelines', () => {
    const clash: AnyPipelineDefinition = {
      ...telemetry,
      name: 'clash',
      pubsub: { ...telemetry.pubsub, topic: booking.pubsub.topic },
      tables: { ...telemetry.tables, silver: booking.tables.silver },
      functions: { ...telemetry.functions, ingest: booking.functions.ingest },
      firestore: { ...telemetry.firestore, windowsRoot: booking.firestore.windowsRoot },
      aggregations: [{ ...telemetry.aggregations[0]!, name: booking.aggregations[0]!.name }],
    };
    const problems = registryProblems([booking, telemetry, clash]).join('\n');
    assert.match(problems, /Pub\/Sub id booking-events is used by booking topic and clash topic/);
    assert.match(
      problems,
      /table offvia_silver\.fact_bookings is used by booking silver and clash silver/,
    );
    assert.match(problems, /entry point ingestbooking is used by booking ingest and clash ingest/);
    assert.match(problems, /Firestore root offviawindows is used by booking state and clash state/);
    assert.match(problems, /aggregation name booking_routes_1m is used by/);
    assert.match(
      registryProblems([booking, booking]).join('\n'),
      /pipeline name booking is used by booking and booking/,
    );
  });

  it('finds names that break Pub/Sub, BigQuery, Firestore and Cloud Functions rules, and a strategy the core refuses', () => {
    const bad: AnyPipelineDefinition = {
      ...telemetry,
      name: 'Telemetry',
      pubsub: { ...telemetry.pubsub, topic: 'goog-readings' },
      tables: {
        ...telemetry.tables,
        silver: { datasetId: 'offvia-telemetry', tableId: 'readings' },
      },
      functions: {
        ...telemetry.functions,
        fireWindows: { entryPoint: 'fire-windows', baseName: 'Fire' },
      },
      firestore: { windowsRoot: 'offvia/windows', schemaDriftRoot: 'drift' },
      aggregations: [
        {
          ...telemetry.aggregations[0]!,
          strategy: { ...telemetry.aggregations[0]!.strategy, allowedLatenessMs: -1 },
        },
      ],
    };
    const problems = definitionProblems(bad).join('\n');
    for (const expected of [
      /pipeline name "Telemetry"/,
      /topic "goog-readings"/,
      /silver table part "offvia-telemetry"/,
      /fireWindows entry point "fire-windows"/,
      /fireWindows base name "Fire"/,
      /Firestore root "offvia\/windows"/,
      /allowedLatenessMs/,
      /schemaDrift.mode "sweep" needs firestore.schemaDriftRoot/,
    ]) {
      assert.match(problems, expected);
    }
  });

  it('refuses service account bases that break IAM ids, are out of step, or are claimed twice', () => {
    const bad: AnyPipelineDefinition = {
      ...telemetry,
      serviceAccounts: {
        ingest: 'Telemetry_ingest',
        fireWindows: 'telemetry-fire-windows-runtime',
        schemaSweep: 'telemetry-sweep',
        bronze: null,
      },
    };
    const problems = definitionProblems(bad).join('\n');
    for (const expected of [
      /ingest account "Telemetry_ingest"/,
      /fireWindows account "telemetry-fire-windows-runtime"/,
      /serviceAccounts.schemaSweep is needed with functions.schemaSweep/,
      /serviceAccounts.bronze is needed with tables.bronze/,
    ]) {
      assert.match(problems, expected);
    }
    const clash: AnyPipelineDefinition = {
      ...telemetry,
      serviceAccounts: {
        ...telemetry.serviceAccounts,
        fireWindows: booking.serviceAccounts.ingest,
      },
    };
    assert.match(
      registryProblems([booking, clash]).join('\n'),
      /service account ingest is used by booking ingest account and telemetry fireWindows account/,
    );
  });

  // Booking's sql/ also creates tables its definition does not name (booking-definition.test.ts checks it).
  for (const p of discoverPipelines(
    pipelineDirs({ OFFVIA_EXTRA_PIPELINE_DIRS: 'test/fixtures/pipelines' }),
  ).filter((d) => d.name !== 'booking')) {
    it(`${p.name}'s DDL files create every table and view its definition names, and only those`, () => {
      const named = pipelineTables(p).map((t) => t.table);
      const created = p.tables.ddlFiles.flatMap((f) =>
        createdObjects(readFileSync(path.join(ROOT, f), 'utf8'))
          .filter((o) => o.tableId !== undefined)
          .map((o) => `${o.datasetId}.${o.tableId ?? ''}`),
      );
      assert.deepEqual([...created].sort(), [...named].sort());
      assert.ok(named.includes(tableName(p.tables.quarantine)));
    });
  }
});
