/**
 * Where the worker tells reviewers that a decision waits (EPISODES_REVIEW_WEBHOOK_URL) and what the notice links to
 * (EPISODES_REVIEW_PUBLIC_URL), from the environment, parsed once at the worker's start (zod). A webhook URL is a
 * secret (Slack's carries its token in the path): it never appears in an error, a log line or a workflow history.
 * The timeout is of one POST (default 10 s, at most 30 s). The review desk reads the public URL by the same rule.
 */
import { z } from 'zod';
import { unsetIfEmpty } from './config';
import { PipelineError, ErrorType } from './domain/errors';
import { firstIssue } from './domain/zod-issue';
import { DEFAULT_REVIEW_WEBHOOK_TIMEOUT_MS, type ReviewNoticeSettings } from './activities/review-notice';

/** Below the notice activity's 1 min start-to-close timeout, so an attempt ends by its own timeout first. */
export const MAX_REVIEW_WEBHOOK_TIMEOUT_MS = 30_000;
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
const publicUrlSchema = z.preprocess(
  unsetIfEmpty,
  urlSchema([httpOrHttps, noCredentials, noFragment, (u) => (u.search ? 'must not contain a query' : undefined)])
    .transform((u) => {
      if (!u.pathname.endsWith('/')) u.pathname += '/';
      return u;
    })
    .optional(),
);

const envSchema = z.object({
  // Webhook URLs may carry their token in the path or the query (Slack, Google Chat); plain http only on this machine.
  EPISODES_REVIEW_WEBHOOK_URL: z.preprocess(
    unsetIfEmpty,
    urlSchema([
      httpOrHttps,
      noCredentials,
      noFragment,
      (u) =>
        u.protocol === 'https:' || LOOPBACK_HOSTS.has(u.hostname)
          ? undefined
          : 'must be https (plain http only to localhost): it is a secret',
    ]).optional(),
  ),
  EPISODES_REVIEW_PUBLIC_URL: publicUrlSchema,
  EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS: z.preprocess(
    unsetIfEmpty,
    z.coerce.number().int().min(100).max(MAX_REVIEW_WEBHOOK_TIMEOUT_MS).default(DEFAULT_REVIEW_WEBHOOK_TIMEOUT_MS),
  ),
});

export function loadReviewNoticeSettings(env: NodeJS.ProcessEnv = process.env): ReviewNoticeSettings {
  const parsed = parseEnv(envSchema, env);
  return {
    webhookUrl: parsed.EPISODES_REVIEW_WEBHOOK_URL,
    publicUrl: parsed.EPISODES_REVIEW_PUBLIC_URL,
    timeoutMs: parsed.EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS,
  };
}

/** EPISODES_REVIEW_PUBLIC_URL alone, by the same rule as the worker's (the desk reads it too). */
export function loadReviewPublicUrl(env: NodeJS.ProcessEnv = process.env): URL | undefined {
  return parseEnv(z.object({ EPISODES_REVIEW_PUBLIC_URL: publicUrlSchema }), env).EPISODES_REVIEW_PUBLIC_URL;
}

function parseEnv<T>(schema: z.ZodType<T>, env: NodeJS.ProcessEnv): T {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const { at, message } = firstIssue(parsed.error, 'environment');
    throw new PipelineError(ErrorType.InvalidInput, `invalid ${at}: ${message}`);
  }
  return parsed.data;
}
