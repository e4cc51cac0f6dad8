/**
 * Where the worker tells reviewers that a decision waits (EPISODES_REVIEW_WEBHOOK_URL) and what the notice links to
 * (EPISODES_REVIEW_PUBLIC_URL), from the environment, parsed once at the worker's start (zod). A webhook URL is a
 * secret (Slack's carries its token in the path): it never appears in an error, a log line or a workflow history.
 * The timeout is of one POST (default 10 s, at most 30 s). The review desk reads the public URL by the same rule.
 */
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import type { ReviewNoticeSettings } from '../activities/review-notice';
import { readSettings } from '../settings/read';

const MAX_URL_LENGTH = 2_048;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

type UrlRule = (url: URL) => string | undefined;

const noCredentials: UrlRule = (u) => (u.username || u.password ? 'must not contain credentials' : undefined);
const noFragment: UrlRule = (u) => (u.hash ? 'must not contain a fragment' : undefined);
const httpOrHttps: UrlRule = (u) => (u.protocol === 'https:' || u.protocol === 'http:' ? undefined : 'must be http(s)');

const urlSchema = (rules: UrlRule[]) =>
  z
    .string()
    .max(MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} characters`)
    .transform((raw, ctx) => {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        // No echo of the value: it may be a secret.
        ctx.addIssue({ code: 'custom', message: 'is not a URL' });
        return z.NEVER;
      }
      for (const rule of rules) {
        const problem = rule(url);
        if (problem !== undefined) {
          ctx.addIssue({ code: 'custom', message: problem });
          return z.NEVER;
        }
      }
      return url;
    });

/** The desk's address as people reach it: the notices link to it, and the desk sets Secure cookies when it is https. */
const publicUrlSchema = urlSchema([
  httpOrHttps,
  noCredentials,
  noFragment,
  (u) => (u.search ? 'must not contain a query' : undefined),
])
  .transform((u) => {
    if (!u.pathname.endsWith('/')) u.pathname += '/';
    return u;
  })
  .optional();

// Webhook URLs may carry their token in the path or the query (Slack, Google Chat); plain http only on this machine.
const webhookUrlSchema = urlSchema([
  httpOrHttps,
  noCredentials,
  noFragment,
  (u) =>
    u.protocol === 'https:' || LOOPBACK_HOSTS.has(u.hostname)
      ? undefined
      : 'must be https (plain http only to localhost): it is a secret',
]).optional();

export function loadReviewNoticeSettings(env: NodeJS.ProcessEnv = process.env): ReviewNoticeSettings {
  const s = readSettings(['EPISODES_REVIEW_WEBHOOK_URL', 'EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS'], env);
  return {
    webhookUrl: parseUrl('EPISODES_REVIEW_WEBHOOK_URL', webhookUrlSchema, s.EPISODES_REVIEW_WEBHOOK_URL),
    publicUrl: loadReviewPublicUrl(env),
    timeoutMs: s.EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS,
  };
}

/** EPISODES_REVIEW_PUBLIC_URL alone, by the same rule as the worker's (the desk reads it too). */
export function loadReviewPublicUrl(env: NodeJS.ProcessEnv = process.env): URL | undefined {
  const raw = readSettings(['EPISODES_REVIEW_PUBLIC_URL'], env).EPISODES_REVIEW_PUBLIC_URL;
  return parseUrl('EPISODES_REVIEW_PUBLIC_URL', publicUrlSchema, raw);
}

function parseUrl(name: string, schema: z.ZodType<URL | undefined>, raw: string | undefined): URL | undefined {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const { message } = firstIssue(parsed.error);
    throw new PipelineError(ErrorType.InvalidInput, `invalid ${name}: ${message}`);
  }
  return parsed.data;
}
