// A pipeline's key-groups aggregations share one Firestore transaction per ingest bundle (JointWindowedPipeline),
// on the Firestore emulator through the generic ingest: each element's outcome in each aggregation is what that
// aggregation alone decides, a reading is counted once while two copies are in flight and on a later redelivery,
// and every bundle is one transaction.
import assert from 'node:assert/strict';
import type { Firestore } from '@google-cloud/firestore';
import { countFirestoreOps, type FirestoreOps } from '../../../bench/lib/firestore-ops';
import { inProcessTelemetry, plannedDeliveries } from '../../../bench/lib/telemetry-rate';
import { planTelemetryRun } from '../../../deploy/local/telemetry-demo/plan';
import { Logger } from '../../../shared/logging/logger';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import {
  ingestPipelineMessage,
  type PipelineIngestOutcome,
} from '../../../shared/pipeline/runtime/ingest';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import { KeyedWindows } from '../../../shared/state/keyed-windows';
import { JointMemberRecorder } from '../../../shared/state/windowed-pipeline';
import { emulatorFirestore, uniqueRoot } from '../../support/firestore-windows';

/** Per aggregation name, an outcome kind (`counted`, `duplicate`, `dropped`, `skipped`). */
type Kinds = Readonly<Record<string, string>>;

/** What one run of the deliveries through a definition decided, and what it cost. */
interface PathRun {
  /** Per reading, the two concurrent deliveries' outcomes. */
  readonly racing: readonly (readonly [Kinds, Kinds])[];
  /** Per reading, the outcome of its later redelivery. */
  readonly redelivered: readonly Kinds[];
  /** Firestore operations of the racing phase. */
  readonly ops: FirestoreOps;
  /** Joint bundles applied in the racing phase (`KeyedWindows.processJointBundle` calls). */
  readonly jointBundles: number;
}

const AGGREGATIONS = TELEMETRY_PIPELINE.aggregations.map((a) => a.name);

describe('joint ingest bundles: all aggregations of a pipeline in one transaction', function () {
  let db: Firestore;
  before(() => {
    db = emulatorFirestore();
  });
  after(async () => {
    await db.terminate();
  });

  // 40 devices, one reading each in one minute; the plan's faults include readings from devices with no region,
  // which the regional aggregation skips (so their dedup id lives in the device aggregation only).
  const plan = planTelemetryRun({
    devices: 40,
    minutes: 1,
    readingsPerMinute: 1,
    seed: 11,
    nowMs: Date.now(),
  });
  // The plan's readings (rejected messages left out) as Pub/Sub delivers them, the same ids in every run.
  const deliveries = plannedDeliveries(plan, 'joint');
  const readings = plan.messages.flatMap((m, i) =>
    m.expect.kind === 'reading' ? [{ expect: m.expect, delivery: deliveries[i] }] : [],
  );

  /** Runs every reading through `definition`: twice at once (a redelivery racing the first), then once more. */
  async function runPath(definition: AnyPipelineDefinition): Promise<PathRun> {
    const { deps } = inProcessTelemetry(
      definition,
      plan,
      db,
      new Logger('jointBundle', () => undefined),
    );
    const deliver = async (i: number): Promise<Kinds> => {
      const delivery = readings[i]?.delivery;
      if (delivery === undefined) throw new Error(`no reading ${i}`);
      const outcome: PipelineIngestOutcome = await ingestPipelineMessage(delivery, deps);
      assert.equal(outcome.destination, 'silver', `reading ${i}`);
      assert.ok('windows' in outcome && outcome.windows !== undefined, `reading ${i} windows`);
      return outcome.windows;
    };
    const jointApply = KeyedWindows.processJointBundle.bind(KeyedWindows);
    let jointBundles = 0;
    // Counts the bundles and delegates: the real transaction runs.
    KeyedWindows.processJointBundle = (...args) => {
      jointBundles++;
      return jointApply(...args);
    };
    const ops = countFirestoreOps(db);
    let racing: [Kinds, Kinds][];
    try {
      racing = await Promise.all(readings.map((_, i) => Promise.all([deliver(i), deliver(i)])));
    } finally {
      KeyedWindows.processJointBundle = jointApply;
    }
    const counted = { ...ops, byCollection: new Map(ops.byCollection) };
    const redelivered: Kinds[] = [];
    for (let i = 0; i < readings.length; i++) redelivered.push(await deliver(i));
    return { racing, redelivered, ops: counted, jointBundles };
  }

  const withRoot = (name: string, aggregations = TELEMETRY_PIPELINE.aggregations) =>
    ({
      ...TELEMETRY_PIPELINE,
      aggregations,
      firestore: { windowsRoot: uniqueRoot(name), schemaDriftRoot: null },
    }) as AnyPipelineDefinition;

  it('decides per element what each aggregation alone decides, counting each reading once', async function () {
    assert.ok(
      readings.some((m) => m.expect.region === null),
      'the plan has readings the regional aggregation skips',
    );
    const jointDefinition = withRoot('jointBundle');
    const { parts } = inProcessTelemetry(jointDefinition, plan, db, new Logger('probe', () => {}));
    assert.ok(
      parts.aggregations.every((a) => a.pipeline instanceof JointMemberRecorder),
      'both key-groups aggregations are members of one joint path',
    );
    const joint = await runPath(jointDefinition);
    for (const [index, aggregation] of TELEMETRY_PIPELINE.aggregations.entries()) {
      const name = AGGREGATIONS[index] as string;
      const alone = await runPath(withRoot(`alone${index}`, [aggregation]));
      assert.equal(alone.jointBundles, 0, `${name} alone takes the single-aggregation path`);
      readings.forEach((m, i) => {
        const of = (run: PathRun) => (run.racing[i] ?? []).map((k) => k[name]).sort();
        assert.deepEqual(of(joint), of(alone), `reading ${i} in ${name}, racing`);
        assert.deepEqual(
          of(joint),
          m.expect.region === null && name !== AGGREGATIONS[0]
            ? ['skipped', 'skipped']
            : ['counted', 'duplicate'],
          `reading ${i} in ${name}: counted once`,
        );
        assert.equal(joint.redelivered[i]?.[name], alone.redelivered[i]?.[name]);
        assert.ok(
          ['duplicate', 'skipped'].includes(joint.redelivered[i]?.[name] ?? ''),
          `reading ${i} redelivered in ${name}: ${JSON.stringify(joint.redelivered[i])}`,
        );
      });
    }
  });

  it('commits each joint bundle in one transaction, bundling many deliveries', async function () {
    const joint = await runPath(withRoot('jointTx'));
    const deliveries = 2 * readings.length;
    assert.ok(joint.jointBundles > 0, 'the deliveries went through joint bundles');
    assert.ok(
      joint.jointBundles <= deliveries / 4,
      `${joint.jointBundles} bundles for ${deliveries} deliveries in flight together`,
    );
    // A contended attempt is retried: each bundle commits one transaction, plus one per rollback at most.
    assert.ok(
      joint.ops.transactions >= joint.jointBundles &&
        joint.ops.transactions <= joint.jointBundles + joint.ops.rollbacks,
      `${joint.ops.transactions} transactions (${joint.ops.rollbacks} rollbacks) for ${joint.jointBundles} bundles`,
    );
  });
});
