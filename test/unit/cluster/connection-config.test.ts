/** Pure parts of the connection configuration: profile loading (real files) and the failure explanations. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig, loadDemoSettings } from '../../../src/process/config';
import { describeSettings, explainFailure, redactSecrets, tlsEnabled } from '../../../src/process/temporal-connection';

describe('Temporal connection configuration', () => {
  let dir: string;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'episodes-envconfig-'));
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });
  const none = () => ({ TEMPORAL_CONFIG_FILE: path.join(dir, 'missing.toml') });

  it('defaults as before: localhost:7233, default, no TLS', () => {
    const t = loadConfig(none()).temporal;
    assert.equal(t.address, 'localhost:7233');
    assert.equal(t.namespace, 'default');
    assert.equal(t.addressConfigured, false);
    assert.equal(tlsEnabled(t), false);
  });

  it('the demo finds the dev server where temporal-dev.sh puts it (EPISODES_DEV_SERVER_IP / _PORT / _UI_PORT)', () => {
    assert.deepEqual(loadDemoSettings({}).devServer, {
      address: '127.0.0.1:7233',
      uiUrl: 'http://127.0.0.1:8233',
    });
    const moved = loadDemoSettings({
      EPISODES_DEV_SERVER_PORT: '17233',
      EPISODES_DEV_SERVER_UI_PORT: '18233',
      EPISODES_DEV_SERVER_IP: '',
    });
    assert.deepEqual(moved.devServer, { address: '127.0.0.1:17233', uiUrl: 'http://127.0.0.1:18233' });
    assert.throws(() => loadDemoSettings({ EPISODES_DEV_SERVER_PORT: 'seventy' }));
  });

  it('an API key alone turns TLS on (as the temporal CLI does); TEMPORAL_TLS=false turns it off', () => {
    assert.equal(tlsEnabled(loadConfig({ ...none(), TEMPORAL_API_KEY: 'k' }).temporal), true);
    assert.equal(tlsEnabled(loadConfig({ ...none(), TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' }).temporal), false);
  });

  it('a TOML profile, with TEMPORAL_* variables on top; an empty variable counts as unset', async () => {
    const file = path.join(dir, 'temporal.toml');
    await fs.writeFile(
      file,
      '[profile.prod]\naddress = "prod.example:7233"\nnamespace = "media"\napi_key = "from-file"\n' +
        '[profile.prod.tls]\nserver_name = "prod.example"\n',
    );
    const t = loadConfig({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_NAMESPACE: 'override',
    }).temporal;
    assert.equal(t.address, 'prod.example:7233');
    assert.equal(t.namespace, 'override');
    assert.equal(t.apiKey, 'from-file');
    assert.equal(t.tls?.serverName, 'prod.example');
    assert.equal(t.addressConfigured, true);
    const blank = loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_ADDRESS: '' }).temporal;
    assert.equal(blank.address, 'prod.example:7233');
    assert.throws(
      // Loaded at first use (a command that never connects never reads the profile), refused then.
      () => loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'nope' }).temporal,
      /Profile 'nope' not found/,
    );
  });

  it('describes what is in use, never the key', () => {
    const t = loadConfig({ ...none(), TEMPORAL_ADDRESS: 'h:1', TEMPORAL_API_KEY: 'very-secret-key' }).temporal;
    const d = describeSettings(t);
    assert.match(d, /^h:1 namespace default \(TLS, API key, no client certificate\)$/);
    assert.ok(!d.includes('very-secret-key'));
  });

  it('redacts the API key and PEM private keys', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----';
    const out = redactSecrets(`key=abc123xyz and ${pem} done`, { apiKey: 'abc123xyz' });
    assert.equal(out, 'key=<api key> and <key> done');
  });

  it('names the cause from what grpc-js, the Rust core or node:tls say', () => {
    const t = loadConfig({ ...none(), TEMPORAL_ADDRESS: '10.0.0.1:7233', TEMPORAL_API_KEY: 'k' }).temporal;
    const cases: [string, RegExp][] = [
      ['tcp connect error, Os { code: 111, kind: ConnectionRefused }', /connection refused/],
      ['InvalidCertificate(UnknownIssuer)', /not signed by the system CAs/],
      ['UNABLE_TO_VERIFY_LEAF_SIGNATURE unable to verify the first certificate', /not signed by/],
      ['InvalidCertificate(NotValidForNameContext { expected: DnsName("x") })', /not valid for the name 10\.0\.0\.1/],
      ["ERR_TLS_CERT_ALTNAME_INVALID Hostname/IP does not match certificate's altnames", /not valid for the name/],
      ['received fatal alert: CertificateRequired', /requires a client certificate/],
      ['received fatal alert: UnknownCA', /rejected the client certificate/],
      [
        '16 UNAUTHENTICATED: Request unauthorized.',
        /rejected the API key \(TEMPORAL_API_KEY\): Request unauthorized\./,
      ],
      ['Failed to connect before the deadline', /no answer within 5000 ms/],
    ];
    for (const [raw, expected] of cases) assert.match(explainFailure(t, raw), expected, raw);
  });
});
