// End to end on the local stack, every registered pipeline without an end-to-end test of its own (not booking, not
// telemetry): its sample messages, published to its topic, each end where the sample says (Silver, the quarantine
// stage, bad data, the schema-retry store). With OFFVIA_EXTRA_PIPELINE_DIRS=test/fixtures/pipelines at `up`, that is
// the payments fixture: `npm run test:fixture`. Without another pipeline the test is skipped.
import assert from 'node:assert/strict';
import { runSampleDemo } from '../../deploy/local/sample-demo';
import { PIPELINES } from '../../shared/pipelines';

/** Pipelines whose own end-to-end tests publish to them (lab-acceptance, telemetry-demo, …). */
const COVERED_ELSEWHERE = ['booking', 'telemetry'];

describe('e2e: sample messages of the other registered pipelines', function () {
  this.timeout(5 * 60_000);
  const others = PIPELINES.filter((p) => !COVERED_ELSEWHERE.includes(p.name));

  before(function () {
    if (others.length === 0) this.skip();
    if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
  });

  for (const p of others) {
    it(`${p.name}: each sample ends where it says`, async () => {
      assert.equal(await runSampleDemo(p, p.samples(Date.now())), 0);
    });
  }
});
