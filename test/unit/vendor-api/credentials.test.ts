import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { createVendorClient } from '../../../src/vendor-api/client';
import { envCredentialsLoader, type CredentialsLoader } from '../../../src/vendor-api/credentials';
import { vendorEndpointFromEnv } from '../../../src/vendor-api/endpoint';
import { assertNoSecret, rejection, TEST_API_KEY } from '../../../testkit/vendor';
import { scratchDir } from '../../../testkit/scratch';

function keyFile(content: string, mode = 0o600): string {
  const file = path.join(scratchDir('vendor-key-'), 'key');
  writeFileSync(file, content, { mode });
  chmodSync(file, mode);
  return file;
}

const isCredentialsMissing = (e: unknown) => isPipelineError(e, ErrorType.CredentialsMissing) && !e.retryable;

describe('vendor credentials', () => {
  it('EPISODES_VENDOR_API_KEY', async () => {
    assert.equal(await envCredentialsLoader({ EPISODES_VENDOR_API_KEY: TEST_API_KEY }).load(), TEST_API_KEY);
  });

  it('EPISODES_VENDOR_API_KEY_FILE, trimmed', async () => {
    const file = keyFile(`\n  ${TEST_API_KEY}\n`);
    assert.equal(await envCredentialsLoader({ EPISODES_VENDOR_API_KEY_FILE: file }).load(), TEST_API_KEY);
  });

  it('no key, an empty key, an empty file, a missing file, both variables → CredentialsMissing, non-retryable', async () => {
    const envs: NodeJS.ProcessEnv[] = [
      {},
      { EPISODES_VENDOR_API_KEY: '' },
      { EPISODES_VENDOR_API_KEY: '   ' },
      { EPISODES_VENDOR_API_KEY_FILE: keyFile('\n') },
      { EPISODES_VENDOR_API_KEY_FILE: path.join(os.tmpdir(), 'no-such-dir-vendor', 'key') },
      { EPISODES_VENDOR_API_KEY_FILE: os.tmpdir() },
      { EPISODES_VENDOR_API_KEY: TEST_API_KEY, EPISODES_VENDOR_API_KEY_FILE: keyFile(TEST_API_KEY) },
    ];
    for (const env of envs) {
      await assert.rejects(
        envCredentialsLoader(env, { warn: () => undefined }).load(),
        isCredentialsMissing,
        JSON.stringify(env),
      );
    }
  });

  it('a malformed key is refused without quoting it', async () => {
    const bad = 'sk-test two words SECRETPART';
    for (const env of [{ EPISODES_VENDOR_API_KEY: bad }, { EPISODES_VENDOR_API_KEY_FILE: keyFile(bad) }]) {
      const e = await rejection(envCredentialsLoader(env).load());
      assert.ok(isCredentialsMissing(e));
      assertNoSecret(e, 'SECRETPART');
    }
  });

  it('warns (without the key) about a key file readable by group or others, and not about a 0600 one', async () => {
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    assert.equal(
      await envCredentialsLoader({ EPISODES_VENDOR_API_KEY_FILE: keyFile(TEST_API_KEY, 0o600) }, { warn }).load(),
      TEST_API_KEY,
    );
    assert.deepEqual(warnings, []);
    assert.equal(
      await envCredentialsLoader({ EPISODES_VENDOR_API_KEY_FILE: keyFile(TEST_API_KEY, 0o644) }, { warn }).load(),
      TEST_API_KEY,
    );
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /644/);
    assertNoSecret(warnings);
  });

  it('is lazy: nothing is read until load(), and the environment is read at load() time', async () => {
    const env: NodeJS.ProcessEnv = { EPISODES_VENDOR_API_KEY_FILE: path.join(os.tmpdir(), 'not-yet-there', 'key') };
    const loader = envCredentialsLoader(env);
    env.EPISODES_VENDOR_API_KEY_FILE = undefined;
    env.EPISODES_VENDOR_API_KEY = TEST_API_KEY;
    assert.equal(await loader.load(), TEST_API_KEY);
  });

  it('createVendorClient loads the key only when invoked, and fails with CredentialsMissing then', async () => {
    let loads = 0;
    const counting: CredentialsLoader = {
      load: () => {
        loads += 1;
        return Promise.resolve(TEST_API_KEY);
      },
    };
    const makeClient = () => createVendorClient(counting, { baseUrl: 'http://127.0.0.1:1', timeoutMs: 100 });
    assert.equal(loads, 0);
    const client = await makeClient();
    assert.equal(loads, 1);
    assert.equal(client.baseUrl.href, 'http://127.0.0.1:1/');
    await assert.rejects(
      createVendorClient(envCredentialsLoader({}), { baseUrl: 'http://127.0.0.1:1' }),
      isCredentialsMissing,
    );
  });
});

describe('vendor endpoint from the environment', () => {
  it('defaults to the simulator port and a 10 s timeout; honours EPISODES_VENDOR_BASE_URL and EPISODES_VENDOR_TIMEOUT_MS', () => {
    const d = vendorEndpointFromEnv({});
    assert.equal(d.baseUrl.href, 'http://127.0.0.1:8790/');
    assert.equal(d.timeoutMs, 10_000);
    const e = vendorEndpointFromEnv({
      EPISODES_VENDOR_BASE_URL: 'https://api.vendor.example/v',
      EPISODES_VENDOR_TIMEOUT_MS: '2500',
    });
    assert.equal(e.baseUrl.href, 'https://api.vendor.example/v/');
    assert.equal(e.timeoutMs, 2500);
  });

  it('refuses a bad URL or timeout with InvalidInput', () => {
    for (const env of [
      { EPISODES_VENDOR_BASE_URL: 'not a url' },
      { EPISODES_VENDOR_BASE_URL: 'http://vendor.example' },
      { EPISODES_VENDOR_BASE_URL: 'https://vendor.example/?token=x' },
      { EPISODES_VENDOR_TIMEOUT_MS: '0' },
      { EPISODES_VENDOR_TIMEOUT_MS: 'soon' },
    ]) {
      assert.throws(
        () => vendorEndpointFromEnv(env),
        (e) => isPipelineError(e, ErrorType.InvalidInput),
        JSON.stringify(env),
      );
    }
  });
});
