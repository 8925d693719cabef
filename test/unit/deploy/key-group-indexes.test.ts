// The deploy plan's Firestore settings for the key-groups layout: TTL policies on its tombstones and spills, index
// exemptions for the fields no query uses, and the composite indexes of fireWindows' timer queries.
import assert from 'node:assert/strict';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import {
  buildDeployPlan,
  KEY_GROUP_COMPOSITE_INDEXES,
  KEY_GROUP_INDEX_EXEMPTIONS,
} from '../../../deploy/gcloud/deploy-plan';
import { commandsOf } from '../../../deploy/gcloud/steps';

import { OPTIONS, P } from '../../support/deploy-plans';

describe('deploy plan: key-groups layout indexes', () => {
  const plan = buildDeployPlan(OPTIONS, readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation));
  const commands = plan.steps.flatMap(commandsOf).map((c) => c.join(' '));

  it('exempts every unqueried key-group field from single-field indexes, on the system database', () => {
    for (const [group, field] of KEY_GROUP_INDEX_EXEMPTIONS) {
      const line = `gcloud firestore indexes fields update ${field} --collection-group=${group} --database=offvia --disable-indexes --async --project=${P}`;
      assert.ok(commands.includes(line), `missing: ${line}`);
    }
    assert.ok(KEY_GROUP_INDEX_EXEMPTIONS.some(([g, f]) => g === 'keyGroups' && f === 'seen'));
  });

  it('creates the (group, timer) composite indexes and the TTL policies of keyGroups and dedupSpills', () => {
    for (const [first, second] of KEY_GROUP_COMPOSITE_INDEXES) {
      assert.ok(
        commands.some(
          (c) =>
            c.startsWith(
              'gcloud firestore indexes composite create --collection-group=keyGroups',
            ) &&
            c.includes(`field-path=${first},order=ascending --field-config=field-path=${second}`),
        ),
        `composite index (${first}, ${second})`,
      );
    }
    for (const group of ['keyGroups', 'dedupSpills']) {
      assert.ok(
        commands.some((c) =>
          c.startsWith(`gcloud firestore fields ttls update expireAt --collection-group=${group}`),
        ),
        `TTL on ${group}`,
      );
    }
  });
});
