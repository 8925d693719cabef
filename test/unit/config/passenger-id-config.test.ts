// OFFVIA_PASSENGER_ID_MODE / OFFVIA_PASSENGER_ID_HMAC_KEY: what the loader accepts, what it refuses (naming the
// variable, never echoing the key), and that the key never reaches a log line.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  loadPassengerIdConfig,
  MIN_HMAC_KEY_BYTES,
  PassengerIdKey,
} from '../../../shared/config/passenger-id-config';
import { ConfigError } from '../../../shared/errors';

const KEY = randomBytes(32);
const MODE = 'OFFVIA_PASSENGER_ID_MODE';
const KEY_VAR = 'OFFVIA_PASSENGER_ID_HMAC_KEY';

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadPassengerIdConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  assert.fail('expected a ConfigError');
}

describe('loadPassengerIdConfig', () => {
  it('is raw by default and for raw', () => {
    assert.deepEqual(loadPassengerIdConfig({}), { mode: 'raw' });
    assert.deepEqual(loadPassengerIdConfig({ [MODE]: 'RAW' }), { mode: 'raw' });
  });

  it('reads a base64 key (standard or URL-safe, with the newline openssl writes) for hmac-sha256', () => {
    for (const text of [
      `${KEY.toString('base64')}\n`,
      KEY.toString('base64url'),
      randomBytes(64).toString('base64'),
    ]) {
      const config = loadPassengerIdConfig({ [MODE]: 'hmac-sha256', [KEY_VAR]: text });
      assert.equal(config.mode, 'hmac-sha256');
      if (config.mode !== 'hmac-sha256') return;
      assert.ok(config.key.bytes().length >= MIN_HMAC_KEY_BYTES);
    }
    const config = loadPassengerIdConfig({
      [MODE]: 'hmac-sha256',
      [KEY_VAR]: KEY.toString('base64url'),
    });
    assert.ok(config.mode === 'hmac-sha256' && config.key.bytes().equals(KEY));
  });

  it('refuses an unknown mode, a missing, short or non-base64 key, and a key with raw, naming the variable', () => {
    assert.equal(refusal({ [MODE]: 'sha256' }).variable, MODE);
    assert.equal(refusal({ [MODE]: 'hmac-sha256' }).variable, KEY_VAR);
    const short = refusal({ [MODE]: 'hmac-sha256', [KEY_VAR]: randomBytes(31).toString('base64') });
    assert.equal(short.variable, KEY_VAR);
    assert.match(short.message, /at least 32 bytes once decoded, got 31/);
    const secret = 'not base64 at all!';
    const bad = refusal({ [MODE]: 'hmac-sha256', [KEY_VAR]: secret });
    assert.equal(bad.variable, KEY_VAR);
    assert.doesNotMatch(bad.message, /not base64 at all/);
    const unused = refusal({ [KEY_VAR]: KEY.toString('base64') });
    assert.equal(unused.variable, KEY_VAR);
    assert.doesNotMatch(
      unused.message,
      new RegExp(KEY.toString('base64').slice(0, 12).replace(/[+/]/g, '.')),
    );
  });

  it('shows the key in logs only as its length and fingerprint', () => {
    const config = loadPassengerIdConfig({
      [MODE]: 'hmac-sha256',
      [KEY_VAR]: KEY.toString('base64'),
    });
    assert.ok(config.mode === 'hmac-sha256');
    const logged = JSON.stringify({ config });
    for (const form of [KEY.toString('base64'), KEY.toString('hex'), KEY.toString('base64url')]) {
      assert.ok(!logged.includes(form.slice(0, 16)), `the key leaks as ${form.slice(0, 8)}…`);
    }
    assert.match(logged, /"key":\{"bytes":32,"fingerprint":"[0-9a-f]{12}"\}/);
    assert.doesNotMatch(String(config.key), new RegExp(KEY.toString('hex').slice(0, 16)));
    assert.notEqual(new PassengerIdKey(randomBytes(32)).fingerprint, config.key.fingerprint);
    assert.throws(() => new PassengerIdKey(randomBytes(16)), RangeError);
  });
});
