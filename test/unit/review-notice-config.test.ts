import assert from 'node:assert/strict';
import { ErrorType } from '../../src/domain/errors';
import { loadReviewNoticeSettings, loadReviewPublicUrl } from '../../src/process/review-notice-config';

const SECRET_PATH = '/services/T000/B000/SECRET-hook-token';

describe('review notice settings (EPISODES_REVIEW_*)', () => {
  it('unset or empty: no webhook, no link, the default timeout', () => {
    for (const env of [{}, { EPISODES_REVIEW_WEBHOOK_URL: '', EPISODES_REVIEW_PUBLIC_URL: '' }]) {
      const s = loadReviewNoticeSettings(env);
      assert.equal(s.webhookUrl, undefined);
      assert.equal(s.publicUrl, undefined);
      assert.equal(s.timeoutMs, 10_000);
    }
  });

  it('takes an https webhook (query allowed), plain http to localhost, and a public URL normalized to a trailing slash', () => {
    const s = loadReviewNoticeSettings({
      EPISODES_REVIEW_WEBHOOK_URL: `https://hooks.example.com${SECRET_PATH}?key=1`,
      EPISODES_REVIEW_PUBLIC_URL: 'https://desk.example.com/review',
      EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS: '2500',
    });
    assert.equal(s.webhookUrl?.href, `https://hooks.example.com${SECRET_PATH}?key=1`);
    assert.equal(s.publicUrl?.href, 'https://desk.example.com/review/');
    assert.equal(s.timeoutMs, 2500);
    assert.equal(
      loadReviewNoticeSettings({ EPISODES_REVIEW_WEBHOOK_URL: 'http://127.0.0.1:9/x' }).webhookUrl?.port,
      '9',
    );
  });

  it('refuses bad values with the variable named and the webhook URL never echoed', () => {
    const bad: Record<string, string>[] = [
      { EPISODES_REVIEW_WEBHOOK_URL: `http://hooks.example.com${SECRET_PATH}` },
      { EPISODES_REVIEW_WEBHOOK_URL: `https://user:pw@hooks.example.com${SECRET_PATH}` },
      { EPISODES_REVIEW_WEBHOOK_URL: `ftp://hooks.example.com${SECRET_PATH}` },
      { EPISODES_REVIEW_WEBHOOK_URL: `https://hooks.example.com${SECRET_PATH}#frag` },
      { EPISODES_REVIEW_WEBHOOK_URL: `not a url ${SECRET_PATH}` },
      { EPISODES_REVIEW_WEBHOOK_URL: `https://hooks.example.com${SECRET_PATH}/${'x'.repeat(2048)}` },
      { EPISODES_REVIEW_PUBLIC_URL: 'https://desk.example.com/?a=1' },
      { EPISODES_REVIEW_PUBLIC_URL: 'javascript:alert(1)' },
      { EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS: '0' },
      { EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS: '60000' },
    ];
    for (const env of bad) {
      const [name] = Object.keys(env);
      assert.throws(
        () => loadReviewNoticeSettings(env),
        (e: { type?: string; message?: string }) =>
          e.type === ErrorType.InvalidInput && e.message!.includes(name!) && !e.message!.includes('SECRET-hook-token'),
        JSON.stringify(env).slice(0, 120),
      );
    }
  });

  it('the desk reads EPISODES_REVIEW_PUBLIC_URL by the same rule as the worker', () => {
    assert.equal(loadReviewPublicUrl({}), undefined);
    assert.equal(
      loadReviewPublicUrl({ EPISODES_REVIEW_PUBLIC_URL: 'https://desk.example.com/r' })?.href,
      'https://desk.example.com/r/',
    );
    for (const raw of [
      'https://u:p@desk.example.com/',
      'https://desk.example.com/?a=1',
      'https://desk.example.com/#x',
      'ftp://desk.example.com/',
    ]) {
      assert.throws(
        () => loadReviewPublicUrl({ EPISODES_REVIEW_PUBLIC_URL: raw }),
        (e: { type?: string; message?: string }) =>
          e.type === ErrorType.InvalidInput && e.message!.includes('EPISODES_REVIEW_PUBLIC_URL'),
        raw,
      );
    }
  });
});
