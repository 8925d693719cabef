// Versioned contracts: the version a message names picks its decoder; unknown, retired and missing versions are
// quarantined at SCHEMA_VALIDATION with a reason naming the version; malformed version lists are found.
import assert from 'node:assert/strict';

import type { ContractVersion, PipelineContract } from '../../../shared/pipeline/definition';
import { contractProblems, decodeVersioned } from '../../../shared/pipeline/versioning';

type Row = { readonly v: string };

function version(label: string, status: ContractVersion<null, Row, null>['status']) {
  return {
    version: label,
    status,
    summary: `version ${label}`,
    decode: () => ({
      ok: true as const,
      eventId: `e-${label}`,
      eventTimeMs: 0,
      eventTimeSource: 'PAYLOAD' as const,
      keys: {},
      row: { v: label },
      element: null,
      extraFields: {},
    }),
  };
}

const CONTRACT: PipelineContract<null, Row, null> = {
  stages: ['PARSE_JSON', 'SCHEMA_VALIDATION'],
  versionFrom: { kind: 'attribute', name: 'contractVersion', whenAbsent: '1' },
  versions: [version('0', 'retired'), version('1', 'accepted'), version('2', 'current')],
  encoding: { kind: 'json' },
  orderingKeyAttribute: null,
};

function decode(contract: PipelineContract<null, Row, null>, attributes: Record<string, string>) {
  return decodeVersioned(
    contract,
    { data: Buffer.from('{}'), attributes, messageId: 'm', publishTimeMs: 0 },
    { receivedAtMs: 0, settings: null },
  );
}

describe('pipeline definitions: versioned contracts', () => {
  it('decodes with the version the attribute names, and with whenAbsent when there is none', () => {
    const two = decode(CONTRACT, { contractVersion: '2' });
    assert.ok(two.ok);
    assert.equal(two.version, '2');
    assert.deepEqual(two.row, { v: '2' });
    const absent = decode(CONTRACT, {});
    assert.ok(absent.ok);
    assert.equal(absent.version, '1');
    assert.equal(decode(CONTRACT, { contractVersion: '' }).version, '1');
  });

  it('quarantines unknown, retired and (when required) missing versions at SCHEMA_VALIDATION, naming them', () => {
    const cases: [Record<string, string>, RegExp, string | null][] = [
      [{ contractVersion: '9' }, /^unknown contract version "9" \(accepted: 1, 2\)$/, null],
      [{ contractVersion: '0' }, /^contract version "0" is retired \(accepted: 1, 2\)$/, '0'],
      [{ contractVersion: 'x'.repeat(100) }, /^unknown contract version "x{32}…"/, null],
    ];
    for (const [attributes, reason, recorded] of cases) {
      const outcome = decode(CONTRACT, attributes);
      assert.ok(!outcome.ok);
      assert.equal(outcome.stage, 'SCHEMA_VALIDATION');
      assert.match(outcome.reason, reason);
      assert.equal(outcome.version, recorded);
    }
    const required = { ...CONTRACT, versionFrom: { ...CONTRACT.versionFrom, whenAbsent: null } };
    const missing = decode(required, {});
    assert.ok(!missing.ok);
    assert.match(
      missing.reason,
      /^missing contract version: attribute contractVersion is required/,
    );
  });

  it('reads a version named by a payload field: string or integer, absent means whenAbsent', () => {
    const byField: PipelineContract<null, Row, null> = {
      ...CONTRACT,
      versionFrom: { kind: 'field', name: 'schema_version', whenAbsent: '1' },
    };
    const decodeData = (data: string) =>
      decodeVersioned(
        byField,
        {
          data: Buffer.from(data),
          attributes: { schema_version: '0' },
          messageId: 'm',
          publishTimeMs: 0,
        },
        { receivedAtMs: 0, settings: null },
      );
    assert.equal(decodeData('{"schema_version": "2"}').version, '2');
    assert.equal(decodeData('{"schema_version": 2}').version, '2');
    // The attribute of the same name is not read: the contract says where the version lives.
    assert.equal(decodeData('{"x": 1}').version, '1');
    assert.equal(decodeData('[1]').version, '1');
    const retired = decodeData('{"schema_version": 0}');
    assert.ok(!retired.ok);
    assert.match(retired.reason, /contract version "0" is retired/);
    const wrongType = decodeData('{"schema_version": 2.5}');
    assert.ok(!wrongType.ok);
    assert.equal(wrongType.stage, 'SCHEMA_VALIDATION');
    assert.match(wrongType.reason, /field schema_version must be a string or an integer, got 2.5/);
    const broken = decodeData('{"schema_version": ');
    assert.ok(!broken.ok);
    assert.equal(broken.stage, 'PARSE_JSON');
    assert.match(broken.reason, /cannot be read/);
    const required = decodeVersioned(
      { ...byField, versionFrom: { ...byField.versionFrom, whenAbsent: null } },
      { data: Buffer.from('{}'), attributes: {}, messageId: 'm', publishTimeMs: 0 },
      { receivedAtMs: 0, settings: null },
    );
    assert.ok(!required.ok);
    assert.match(required.reason, /^missing contract version: field schema_version is required/);
    assert.match(
      contractProblems({ ...byField, stages: ['SCHEMA_VALIDATION'] }).join('\n'),
      /PARSE_JSON when the version is a payload field/,
    );
  });

  it('finds malformed version lists', () => {
    assert.deepEqual(contractProblems(CONTRACT), []);
    const problems = (patch: Partial<PipelineContract<null, Row, null>>) =>
      contractProblems({ ...CONTRACT, ...patch }).join('\n');
    assert.match(problems({ versions: [] }), /no contract version/);
    assert.match(
      problems({ versions: [version('1', 'current'), version('1', 'accepted')] }),
      /duplicate/,
    );
    assert.match(problems({ versions: [version('1', 'accepted')] }), /0 current versions/);
    assert.match(
      problems({ versionFrom: { kind: 'attribute', name: 'v', whenAbsent: '0' } }),
      /whenAbsent "0" is not a decodable version/,
    );
    assert.match(problems({ versions: [version('1 2', 'current')] }), /version labels/);
    assert.match(problems({ stages: ['PARSE_JSON'] }), /must include SCHEMA_VALIDATION/);
  });
});
