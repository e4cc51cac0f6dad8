/**
 * The road from laptop to production, on a production-shaped front end (testkit/secure-front.ts: nginx with TLS,
 * client certificates and an API key before a dev server that has no custom search attributes). Every process is
 * the real one (`node dist/src/worker.js`, the `episodes` CLI) configured only as an operator would: the standard
 * TEMPORAL_* variables, or a TOML profile.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { WORKFLOW_TEST_API_KEY, startTestVendor } from '../../../testkit/deps';
import { collect, runCli, spawnNode, type ProcessResult } from '../../../testkit/processes';
import {
  PROFILE_NAMESPACE,
  SERVER_NAME,
  freePort,
  startSecureFront,
  withoutTemporalVariables,
  type SecureFront,
} from '../../../testkit/secure-front';
import { until } from '../../../testkit/wait';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';

const SETUP_HINT = /npx episodes cluster setup/;

describe('a secured Temporal cluster (nginx: TLS, client certificates, API key)', function () {
  this.timeout(240_000);
  let front: SecureFront;
  let vendor: VendorSimulator;

  before(async () => {
    front = await startSecureFront();
    vendor = await startTestVendor();
  });
  after(async () => {
    await vendor?.close();
    await front?.stop();
  });

  /** What a host of the pipeline has besides Temporal: its data dir and the vendor. Nothing else inherited. */
  const hostEnv = (dataDir: string, temporal: Record<string, string>): Record<string, string> => ({
    ...withoutTemporalVariables(),
    // A missing file: the runner's own ~/.config/temporalio/temporal.toml must not take part.
    TEMPORAL_CONFIG_FILE: path.join(front.dir, 'no-such-temporal.toml'),
    EPISODES_DATA_DIR: dataDir,
    EPISODES_STORE_URL: '',
    EPISODES_FAILPOINTS: '',
    EPISODES_VENDOR_BASE_URL: vendor.url,
    EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
    EPISODES_VENDOR_API_KEY_FILE: '',
    ...temporal,
  });

  async function scheduledWeeklyRun(dataDir: string, namespace: string, temporal: Record<string, string>) {
    const env = hostEnv(dataDir, temporal);
    const cli = (...args: string[]) => runCli(args, env);

    const before = await cli('cluster', 'check');
    assert.equal(before.code, 1, before.stdout + before.stderr);
    assert.match(before.stdout, /^ok {3}server: reachable at .*\(TLS, API key, client certificate /m);
    assert.match(before.stdout, new RegExp(`^ok {3}namespace: ${namespace} exists`, 'm'));
    assert.match(before.stdout, /^FAIL search attributes: EpisodeId missing, WeekId missing$/m);
    assert.match(before.stderr, SETUP_HINT);

    const refused = await runNode('src/worker.js', env);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.equal(lines(refused.stderr).length, 1, refused.stderr);
    assert.match(refused.stderr, /NamespaceNotReady: namespace \S+ lacks the search attributes EpisodeId, WeekId/);
    assert.match(refused.stderr, SETUP_HINT);

    const setup = await cli('cluster', 'setup');
    assert.equal(setup.code, 0, setup.stderr);
    assert.match(setup.stdout, /search attribute EpisodeId: registered/);
    assert.match(setup.stdout, /search attribute WeekId: registered/);
    assert.match(setup.stdout, /schedule weekly-media: created/);
    assert.match(setup.stdout, /deployment weekly-media: no worker has polled yet \(the first build becomes current/);
    const again = await cli('cluster', 'setup');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /EpisodeId: already registered/);
    assert.match(again.stdout, /WeekId: already registered/);
    assert.match(again.stdout, /schedule weekly-media: already there, unchanged/);

    const worker = spawnNode('src/worker.js', [], env);
    const exited = collect(worker);
    try {
      await waitForOutput(worker, /worker: task queue/);
      const check = await until(
        'cluster check passes',
        async () => {
          const r = await cli('cluster', 'check', '--json');
          return r.code === 0 ? r : undefined;
        },
        90_000,
        300,
      );
      const report = JSON.parse(check.stdout) as { ok: boolean; checks: { check: string; ok: boolean }[] };
      assert.equal(report.ok, true);
      assert.deepEqual(
        report.checks.map((c) => c.check),
        ['server', 'namespace', 'search attributes', 'schedule', 'workers', 'deployment'],
      );

      const trigger = await cli('schedule', 'trigger');
      assert.equal(trigger.code, 0, trigger.stderr);
      const episodeId = await until(
        'the scheduled run allocates',
        async () => {
          const list = JSON.parse((await cli('list', '--json')).stdout) as { episode_id: string; status: string }[];
          return list.find((e) => e.status === 'awaiting_approval')?.episode_id;
        },
        90_000,
        300,
      );
      const approve = await cli('approve', episodeId, '--by', 'secured-test');
      assert.equal(approve.code, 0, approve.stderr);
      await until(
        'the production completes',
        async () => {
          const show = JSON.parse((await cli('show', episodeId, '--json')).stdout) as { status: string };
          return show.status === 'completed' ? true : undefined;
        },
        90_000,
        300,
      );
      const ledger = await cli('ledger', '--json');
      assert.equal(ledger.code, 0, ledger.stdout + ledger.stderr);
      const view = JSON.parse(ledger.stdout) as {
        episodes: { episode_id: string; steps: unknown[] }[];
        reconciliation: { unrecorded_charges: unknown[]; unbilled_entries: unknown[] };
      };
      assert.equal(view.episodes.find((e) => e.episode_id === episodeId)?.steps.length, 3, 'video, cover, assembly');
      assert.deepEqual(view.reconciliation.unrecorded_charges, []);
      assert.deepEqual(view.reconciliation.unbilled_entries, []);
    } finally {
      worker.kill('SIGTERM');
      await exited;
    }
  }

  it('standard variables only: check fails, the worker refuses, setup, check passes, a scheduled episode is produced', async () => {
    const dataDir = await fs.mkdtemp(path.join(front.dir, 'vars-'));
    await scheduledWeeklyRun(dataDir, 'default', front.standardEnv());
  });

  it('the same through a TOML profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE), on another namespace', async () => {
    const dataDir = await fs.mkdtemp(path.join(front.dir, 'toml-'));
    const file = path.join(front.dir, 'temporal.toml');
    await fs.writeFile(
      file,
      [
        '[profile.default]',
        'address = "127.0.0.1:1"',
        '',
        '[profile.secured]',
        `address = "${front.address}"`,
        `namespace = "${PROFILE_NAMESPACE}"`,
        `api_key = "${front.apiKey}"`,
        '[profile.secured.tls]',
        `client_cert_path = "${front.files.clientCert}"`,
        `client_key_path = "${front.files.clientKey}"`,
        `server_ca_cert_path = "${front.files.ca}"`,
        `server_name = "${SERVER_NAME}"`,
        '',
      ].join('\n'),
    );
    await scheduledWeeklyRun(dataDir, PROFILE_NAMESPACE, { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'secured' });
  });

  describe('each bad credential: worker and CLI exit 1 with one line naming the cause, and no secret', () => {
    const cases: {
      name: string;
      env: () => Promise<Record<string, string>> | Record<string, string>;
      cause: RegExp;
    }[] = [
      {
        name: 'no client certificate',
        env: () => front.standardEnv({ TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' }),
        cause: /no client certificate.*: the server requires a client certificate/,
      },
      {
        name: 'a client certificate from another CA',
        env: () =>
          front.standardEnv({
            TEMPORAL_TLS_CLIENT_CERT_PATH: front.files.rogueCert,
            TEMPORAL_TLS_CLIENT_KEY_PATH: front.files.rogueKey,
          }),
        cause: /the server rejected the client certificate/,
      },
      {
        name: 'the wrong CA for the server',
        env: () => front.standardEnv({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: front.files.otherCa }),
        cause: /the server's certificate is not signed by the CA in \S*other-ca\.crt/,
      },
      {
        name: 'the wrong server name',
        env: () => front.standardEnv({ TEMPORAL_TLS_SERVER_NAME: 'elsewhere.test' }),
        cause: /the server's certificate is not valid for the name elsewhere\.test/,
      },
      {
        name: 'a wrong API key',
        env: () => front.standardEnv({ TEMPORAL_API_KEY: `${front.apiKey}-revoked` }),
        cause: /the server rejected the API key \(TEMPORAL_API_KEY\): invalid API key/,
      },
      {
        name: 'an unreachable port',
        env: async () => front.standardEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` }),
        cause: /connection refused/,
      },
    ];
    const privateKey = readKeyBody;

    for (const c of cases) {
      it(c.name, async () => {
        const env = hostEnv(front.dir, await c.env());
        const [cliRun, workerRun] = await Promise.all([
          runCli(['schedule', 'describe'], env),
          runNode('src/worker.js', env),
        ]);
        for (const [who, r] of [
          ['cli', cliRun],
          ['worker', workerRun],
        ] as const) {
          const out = r.stdout + r.stderr;
          assert.equal(r.code, 1, `${who}: ${out}`);
          assert.equal(lines(r.stderr).length, 1, `${who} prints one line: ${r.stderr}`);
          assert.match(r.stderr, /ConnectionFailed: cannot connect to Temporal at /, who);
          assert.match(r.stderr, c.cause, `${who}: ${r.stderr}`);
          for (const secret of [
            front.apiKey,
            env.TEMPORAL_API_KEY ?? front.apiKey,
            privateKey(front.files.clientKey),
          ]) {
            assert.ok(!out.includes(secret), `${who} output contains a secret`);
          }
        }
      });
    }

    it('a server that accepts and never answers: the connect timeout ends the wait', async () => {
      const silent = net.createServer(() => undefined);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as net.AddressInfo;
      try {
        const env = hostEnv(
          front.dir,
          front.standardEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${port}`, EPISODES_CONNECT_TIMEOUT_MS: '1500' }),
        );
        for (const r of await Promise.all([runCli(['cluster', 'check'], env), runNode('src/worker.js', env)])) {
          assert.equal(r.code, 1, r.stdout + r.stderr);
          assert.match(r.stdout + r.stderr, /no answer within 1500 ms/);
        }
      } finally {
        silent.close();
      }
    });
  });
});

function runNode(script: string, env: Record<string, string>): Promise<ProcessResult> {
  return collect(spawnNode(script, [], env));
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}

/** The base64 body of a PEM private key (a long line of it is what a leak would show). */
function readKeyBody(file: string): string {
  const body = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'));
  return body[1] ?? body[0] ?? '';
}

function waitForOutput(child: ChildProcess, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (pattern.test(out)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before ${pattern}: ${out}`)));
  });
}
