// Fuzzing validateBooking: it returns for any input, rejects with a known stage, and only accepts valid rows.
import fc from 'fast-check';

import { CONTRACT_FIELDS, validateBooking } from '../../../shared/contract';
import { assertWellFormed } from '../../support/validation-invariants';
import { booking, OPTIONS } from './fixtures';

const RUNS = 500;

function run(payload: Uint8Array | string): void {
  assertWellFormed(validateBooking(payload, OPTIONS));
}

/** JSON text of any value fast-check can build; values JSON cannot express are stringified another way. */
function anyJsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch (error: unknown) {
    // BigInts and cyclic values cannot be JSON; their failure is still a payload worth trying.
    return error instanceof Error ? error.message : 'unstringifiable';
  }
}

/** Fields that are valid, or near misses of valid, so that all four stages get reached. */
const fieldValue = fc.oneof(
  fc.constantFrom(
    'BK-1',
    'JFK',
    'LHR',
    'jfk',
    '',
    ' ',
    '749.50',
    '-5',
    '1e-10',
    '0',
    'USD',
    'CONFIRMED',
  ),
  fc.constantFrom(
    '2026-10-07T14:10:00Z',
    '2026-10-07T14:10:00',
    '2026-02-30T00:00:00Z',
    '2026-10-07T16:10:00+02:00',
  ),
  fc.jsonValue(),
);

describe('validateBooking under fuzzing', () => {
  it('returns for any string (property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), run), { numRuns: RUNS });
  });

  it('returns for any bytes (property)', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), run), { numRuns: RUNS });
  });

  it('returns for any JavaScript value serialized as JSON (property)', () => {
    fc.assert(
      fc.property(
        fc.anything({ withBoxedValues: true, withNullPrototype: true, withObjectString: true }),
        (value) => run(anyJsonText(value)),
      ),
      { numRuns: RUNS },
    );
  });

  it('returns for any JSON value, as text and as UTF-8 bytes (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        run(text);
        run(Buffer.from(text, 'utf8'));
      }),
      { numRuns: RUNS },
    );
  });

  it('returns for bookings with fields replaced, removed, duplicated or added (property)', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom(...CONTRACT_FIELDS, 'extra', '__proto__'),
          fc.option(fieldValue),
        ),
        fc.constantFrom(...CONTRACT_FIELDS),
        fieldValue,
        (changes, duplicated, duplicateValue) => {
          const overrides = Object.fromEntries(
            Object.entries(changes).map(([key, value]) => [key, value ?? undefined]),
          );
          const text = JSON.stringify(booking(overrides));
          run(text);
          run(
            `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"${duplicated}":${JSON.stringify(duplicateValue)}}`,
          );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('returns for random cuts and byte flips of a valid booking (property)', () => {
    const bytes = Buffer.from(JSON.stringify(booking()), 'utf8');
    fc.assert(
      fc.property(
        fc.nat({ max: bytes.length }),
        fc.nat({ max: bytes.length - 1 }),
        fc.nat({ max: 255 }),
        (cut, at, byte) => {
          run(bytes.subarray(0, cut));
          const flipped = Buffer.from(bytes);
          flipped[at] = byte;
          run(flipped);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
