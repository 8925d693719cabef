// decodeMessagePublished: Eventarc/Functions Framework CloudEvent data → bytes, attributes, ids.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeMessagePublished } from '../../../shared/pubsub/message';

describe('decodeMessagePublished', () => {
  it('decodes base64 data, attributes, message id and publish time', () => {
    const r = decodeMessagePublished(
      {
        message: {
          data: Buffer.from('{"a":1}').toString('base64'),
          attributes: { source: 'checkout', n: 3 },
          messageId: '42',
          publishTime: '2026-10-07T14:10:00.123Z',
        },
        subscription: 'projects/p/subscriptions/s',
      },
      'ce-1',
    );
    assert.ok(r.ok);
    assert.equal(r.message.data.toString(), '{"a":1}');
    assert.deepEqual(r.message.attributes, { source: 'checkout' });
    assert.equal(r.message.messageId, '42');
    assert.equal(r.message.publishTimeMs, Date.UTC(2026, 9, 7, 14, 10, 0, 123));
    assert.equal(r.message.subscription, 'projects/p/subscriptions/s');
  });

  it('accepts snake_case ids and attributes-only messages (empty data)', () => {
    const r = decodeMessagePublished(
      { message: { message_id: '7', attributes: { k: 'v' } } },
      'ce',
    );
    assert.ok(r.ok);
    assert.equal(r.message.messageId, '7');
    assert.equal(r.message.data.length, 0);
    assert.equal(r.message.publishTimeMs, undefined);
  });

  it('falls back to the CloudEvent id when the message has none', () => {
    const r = decodeMessagePublished({ message: { data: '' } }, 'ce-9');
    assert.ok(r.ok);
    assert.equal(r.message.messageId, 'ce-9');
  });

  it('reports events that are not Pub/Sub messages, keeping their text', () => {
    for (const data of [undefined, null, 'x', [1], { foo: 1 }, { message: 'str' }]) {
      const r = decodeMessagePublished(data, 'ce-2');
      assert.equal(r.ok, false, JSON.stringify(data));
      if (!r.ok) assert.equal(r.messageId, 'ce-2');
    }
  });

  it('refuses data that is not base64 instead of decoding garbage', () => {
    const r = decodeMessagePublished({ message: { data: 'not base64!', messageId: '5' } }, 'ce');
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.messageId, '5');
      assert.match(r.raw, /not base64!/);
    }
  });

  it('round-trips any bytes and never throws on any input', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const r = decodeMessagePublished(
          { message: { data: Buffer.from(bytes).toString('base64'), messageId: 'm' } },
          'c',
        );
        assert.ok(r.ok);
        assert.deepEqual(new Uint8Array(r.message.data), bytes);
      }),
    );
    fc.assert(fc.property(fc.anything(), (data) => void decodeMessagePublished(data, 'c')));
  });
});
