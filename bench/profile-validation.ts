// Profiling aid: validateBooking over the benchmark's stream for 4 s on one core, for a CPU profile of the core.
//   node --cpu-prof --cpu-prof-dir=bench/out/prof --import tsx bench/profile-validation.ts
import { validateBooking } from '../shared/contract';
import { defaultSpec, generateStream } from './lib/stream';
const events = generateStream(defaultSpec(Date.now() - 200000, 10000)).map((e) =>
  Buffer.from(e.payload),
);
const o = {
  messageId: 'm',
  receivedAtMs: Date.now(),
  maxFutureSkewMs: 300000,
  maxEventAgeMs: 315360000000,
};
const t0 = Date.now();
let n = 0;
while (Date.now() - t0 < 4000) {
  for (const p of events) validateBooking(p, o);
  n += events.length;
}
console.log(`validateBooking: ${n / 4} events/s`);
