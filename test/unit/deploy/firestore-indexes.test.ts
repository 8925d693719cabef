// The deploy plan's Firestore settings come from the inventory (shared/state/firestore-inventory.ts): an index
// exemption for every monotonic or high-rate field no query uses, the single-field indexes the queries need left on,
// a TTL policy on every growing collection that has a TTL field, and fireWindows' composite timer indexes.
import assert from 'node:assert/strict';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import { commandsOf } from '../../../deploy/gcloud/steps';
import { FIRESTORE_INVENTORY } from '../../../shared/state/firestore-inventory';
import { OPTIONS, P } from '../../support/deploy-plans';
import {
  firestoreCoverageProblems,
  firestoreSettingsOf,
} from '../../support/firestore-plan-coverage';

describe('deploy plan: Firestore index exemptions, TTL policies and composite indexes', () => {
  const plan = buildDeployPlan(OPTIONS, readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation));
  const commands = plan.steps.flatMap(commandsOf).map((c) => c.join(' '));
  const settings = firestoreSettingsOf(plan);

  it('carries out every decision of the inventory (exempt, indexed for a query, TTL, composite)', () => {
    const all = new Map(
      FIRESTORE_INVENTORY.map((c) => [c.collection, new Set(Object.keys(c.fields))]),
    );
    assert.deepEqual(firestoreCoverageProblems(plan, all), []);
  });

  it('exempts the key-group fields no query uses, on the system database', () => {
    for (const [group, field] of [
      ['keyGroups', 'w'],
      ['keyGroups', 'c'],
      ['keyGroups', 'seen'],
      ['keyGroups', 'expireAt'],
      ['dedupSpills', 'seen'],
      ['paneBatches', 'panes_json'],
    ]) {
      const line = `gcloud firestore indexes fields update ${field} --collection-group=${group} --database=offvia --disable-indexes --async --project=${P}`;
      assert.ok(commands.includes(line), `missing: ${line}`);
    }
  });

  it('exempts the dropped-late counters’ and watermark holds’ growing fields, and keeps the queried ones indexed', () => {
    for (const field of ['window_start_ms', 'last_dropped_at_ms', 'last_event_id', 'expireAt']) {
      assert.ok(settings.exempt.has(`droppedLate.${field}`), `droppedLate.${field}`);
    }
    for (const field of ['expireAt', 'expires_at_ms', 'last_failed_at_ms', 'message_id']) {
      assert.ok(settings.exempt.has(`watermarkHolds.${field}`), `watermarkHolds.${field}`);
    }
    for (const queried of [
      'watermarkHolds.publish_time_ms',
      'keyGroups.group',
      'keyGroups.event_timer_ms',
      'keyGroups.processing_timer_ms',
      'paneBatches.created_at_ms',
      'rows.processed_timestamp',
    ]) {
      assert.ok(!settings.exempt.has(queried), `${queried} is queried: it must stay indexed`);
    }
  });

  it('sets a TTL policy on every collection the inventory gives one, once', () => {
    const withTtl = FIRESTORE_INVENTORY.filter((c) => 'field' in c.ttl).map((c) => c.collection);
    assert.deepEqual([...withTtl].sort(), [
      'dedupSpills',
      'droppedLate',
      'eventLedger',
      'keyGroups',
      'watermarkHolds',
    ]);
    for (const group of withTtl) {
      const ttl = commands.filter((c) =>
        c.startsWith(`gcloud firestore fields ttls update expireAt --collection-group=${group} `),
      );
      assert.equal(ttl.length, 1, `TTL on ${group}`);
    }
  });

  it('gives every collection without a TTL a reason, and every kept index a reason', () => {
    for (const c of FIRESTORE_INVENTORY) {
      if ('none' in c.ttl) assert.ok(c.ttl.none.length > 10, `${c.collection}: why no TTL`);
      for (const [field, d] of Object.entries(c.fields)) {
        const reason = d.index === 'query' ? d.query : d.why;
        assert.ok(reason.length > 10, `${c.collection}.${field}: a reason`);
      }
    }
  });

  it('creates the (group, timer) composite indexes of keyGroups', () => {
    assert.ok(settings.composite.has('keyGroups(group,event_timer_ms)'));
    assert.ok(settings.composite.has('keyGroups(group,processing_timer_ms)'));
  });

  it('reports a written field without a decision, and a decision the plan does not carry out', () => {
    const problems = firestoreCoverageProblems(
      { ...plan, steps: plan.steps.filter((s) => !s.title.includes('droppedLate.expireAt')) },
      new Map([
        ['droppedLate', new Set(['expireAt', 'new_field'])],
        ['unknownCollection', new Set(['x'])],
      ]),
    );
    assert.deepEqual(problems, [
      'droppedLate: the inventory gives it a TTL, the plan sets none',
      'droppedLate.expireAt: exempt in the inventory, no exemption in the plan',
      'droppedLate.new_field: written, no decision',
      'unknownCollection: written, but not in the Firestore inventory',
    ]);
  });
});
