/** The simulator's playable media: real MP4/PNG where ffmpeg is, today's synthetic bytes (and one notice) where not. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { createMediaRenderer, roundOfClientRef } from '../../../src/vendor-sim/media-render';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { DEFAULT_ARTIFACT_BYTES } from '../../../src/vendor-sim/simulator';
import { raw, TEST_API_KEY, useSimulators } from '../../../testkit/vendor';
import { until } from '../../../testkit/wait';
import { scratchDir } from '../../../testkit/scratch';

async function artifactOf(sim: VendorSimulator, kind: string, ref: string) {
  const body = { kind, episode_id: '2026-W32-1', spec: {} };
  const { job_id } = (await raw(sim, 'POST', '/v1/jobs', { body, idempotencyKey: ref })).json as { job_id: string };
  const job = await until('the job to succeed', async () => {
    const j = (await raw(sim, 'GET', `/v1/jobs/${job_id}`)).json as { artifact_id: string | null };
    return j.artifact_id ?? undefined;
  });
  const res = await fetch(`${sim.url}/v1/artifacts/${job}`, { headers: { authorization: `Bearer ${TEST_API_KEY}` } });
  assert.equal(res.status, 200);
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

function probe(bytes: Buffer, ext: string): { codec_name: string; width: number; height: number; duration?: string } {
  const file = path.join(scratchDir('media-probe-'), `a.${ext}`);
  writeFileSync(file, bytes);
  const out = execFileSync('ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', file], { encoding: 'utf8' });
  return (JSON.parse(out) as { streams: { codec_name: string; width: number; height: number }[] }).streams[0]!;
}

function assertConsistent(res: Response, bytes: Buffer, type: string): void {
  assert.equal(res.headers.get('content-type'), type);
  assert.equal(res.headers.get('content-length'), String(bytes.length));
  assert.equal(res.headers.get('x-artifact-sha256'), createHash('sha256').update(bytes).digest('hex'));
}

describe('vendor simulator media', function () {
  this.timeout(60_000);
  const startSim = useSimulators();

  it('renders a video step as H.264 in MP4, deterministic across jobs and simulators', async () => {
    const a = await artifactOf(await startSim({ jobDurationMs: 0 }), 'video', '2026-W32-1:video:r0');
    assertConsistent(a.res, a.bytes, 'video/mp4');
    assert.equal(a.bytes.subarray(4, 8).toString('latin1'), 'ftyp');
    const stream = probe(a.bytes, 'mp4');
    assert.equal(stream.codec_name, 'h264');
    assert.deepEqual([stream.width, stream.height], [320, 180]);
    assert.ok(Number(stream.duration) >= 2, `duration ${stream.duration}`);
    const b = await artifactOf(await startSim({ jobDurationMs: 0 }), 'video', '2026-W32-1:video:r0');
    assert.equal(b.res.headers.get('x-artifact-sha256'), a.res.headers.get('x-artifact-sha256'));
    // Another round is another picture (its caption differs).
    const c = await artifactOf(await startSim({ jobDurationMs: 0 }), 'rework', '2026-W32-1:rework:r1');
    assertConsistent(c.res, c.bytes, 'video/mp4');
    assert.notEqual(c.res.headers.get('x-artifact-sha256'), a.res.headers.get('x-artifact-sha256'));
  });

  it('renders the cover as a PNG', async () => {
    const a = await artifactOf(await startSim({ jobDurationMs: 0 }), 'cover', '2026-W32-1:cover:r0');
    assertConsistent(a.res, a.bytes, 'image/png');
    assert.deepEqual([...a.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.deepEqual([probe(a.bytes, 'png').width, probe(a.bytes, 'png').height], [640, 360]);
  });

  it('without ffmpeg: synthetic bytes of the documented size, and one notice for all jobs', async () => {
    const notices: string[] = [];
    const renderer = createMediaRenderer({ ffmpeg: '/nonexistent/ffmpeg', notice: (l) => notices.push(l) });
    assert.equal(await renderer.render({ kind: 'video', episodeId: '2026-W32-1', round: 0 }), null);
    assert.equal(await renderer.render({ kind: 'cover', episodeId: '2026-W32-1', round: 0 }), null);
    assert.equal(notices.length, 1);
    assert.match(notices[0]!, /not found.*synthetic/);

    const sim = await startSim({ jobDurationMs: 0, ffmpeg: '/nonexistent/ffmpeg' });
    const a = await artifactOf(sim, 'video', '2026-W32-1:video:r0');
    assertConsistent(a.res, a.bytes, 'video/mp4');
    assert.equal(a.bytes.length, DEFAULT_ARTIFACT_BYTES.video);
    assert.notEqual(a.bytes.subarray(4, 8).toString('latin1'), 'ftyp');
  });

  it('a job stays running until its render is done, so a download never waits for the encoder', async () => {
    const slow = path.join(scratchDir('slow-ffmpeg-'), 'ffmpeg');
    writeFileSync(slow, '#!/bin/sh\nsleep 1\nexec ffmpeg "$@"\n', { mode: 0o755 });
    const sim = await startSim({ jobDurationMs: 0, ffmpeg: slow });
    const body = { kind: 'video', episode_id: '2026-W32-1', spec: {} };
    const { job_id } = (await raw(sim, 'POST', '/v1/jobs', { body, idempotencyKey: '2026-W32-1:video:r0' })).json as {
      job_id: string;
    };
    const first = (await raw(sim, 'GET', `/v1/jobs/${job_id}`)).json as { status: string; artifact_id: string | null };
    assert.deepEqual([first.status, first.artifact_id], ['running', null]);
    const a = await artifactOf(sim, 'video', '2026-W32-1:video:r0');
    assert.equal(a.bytes.subarray(4, 8).toString('latin1'), 'ftyp');
  });

  it('reads the round from the idempotency key only in its own shape', () => {
    assert.equal(roundOfClientRef('2026-W32-1:rework:r12'), 12);
    assert.equal(roundOfClientRef('k1'), null);
    assert.equal(roundOfClientRef(null), null);
  });
});
