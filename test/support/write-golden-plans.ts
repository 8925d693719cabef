// Writes the golden dry-run plans (test/unit/deploy/golden/<scenario>.jsonl: the argv, the header, then one step a
// line and one generated file a line) from the current code. Run only to pin a
// deliberate change of the plans: `npx tsx test/support/write-golden-plans.ts`, then review the diff.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/gcloud/cli';
import { GOLDEN_SCENARIOS, scenarioPlan } from './deploy-plans';

for (const scenario of GOLDEN_SCENARIOS) {
  const plan = scenarioPlan(scenario);
  const file = path.join(REPO_ROOT, 'test', 'unit', 'deploy', 'golden', `${scenario.name}.jsonl`);
  // A generated file (metric, policy, dashboard JSON) by its digest: its content is pinned by other tests.
  const files = plan.files.map((f) => ({
    path: f.path,
    sha256: createHash('sha256').update(f.content).digest('hex'),
  }));
  const lines = [
    { argv: scenario.argv, header: plan.header },
    ...plan.steps.map((step) => ({ step })),
    ...files.map((file) => ({ file })),
  ];
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  process.stdout.write(`${file}: ${plan.steps.length} steps, ${plan.files.length} files\n`);
}
