/**
 * `episodes review …`: the review desk (serve), its reviewers (add-reviewer, rotate-reviewer, remove-reviewer,
 * list-reviewers) and its sessions (sessions, sessions --revoke ID).
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { refuseFailpointsOutsideTests } from '../failpoints';
import { openReviewSessions } from '../store/open-store';
import type { ReviewSession } from '../store/review-sessions';
import { AuditLog } from '../review/audit-log';
import { listenProblem, loadDeskSettings } from '../review/desk-settings';
import { ReviewerStore, reviewersFile } from '../review/reviewers';
import { checkDeskFiles } from '../review/start-checks';
import { readSetting } from '../settings/read';
import { defaultText } from '../settings/reference';
import { sessionIsCurrent } from '../review/desk';
import { OidcSignIn } from '../review/oidc';
import { loadSessionKey, sessionKeyFile } from '../review/session-key';
import { DeskSessions, sessionHandle } from '../review/sessions';
import type { CliContext } from './context';
import { untilSignal } from './vendor-commands';

const listenSchema = z
  .string()
  .regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/, 'expected HOST:PORT, e.g. 127.0.0.1:8240')
  .transform((s) => {
    const at = s.lastIndexOf(':');
    return { host: s.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(s.slice(at + 1)) };
  })
  .refine((l) => l.port <= 65_535, 'the port must be 0-65535');

/** `HOST:PORT` (`[::1]:8240` for IPv6) as the desk listens on it. */
export function parseListenAddress(raw: string, flag = '--listen'): { host: string; port: number } {
  return parse(flag, listenSchema, raw);
}

export function registerReviewCommands(program: Command, ctx: CliContext): void {
  const review = program.command('review').description('the review desk: approve or rework episodes in a browser');
  const reviewers = () => new ReviewerStore(reviewersFile(ctx.dataDir));
  registerServe(review, ctx, reviewers);
  registerSessions(review, ctx, reviewers);
  registerReviewers(review, reviewers);
}

function registerServe(review: Command, ctx: CliContext, reviewers: () => ReviewerStore): void {
  review
    .command('serve')
    .description('serve the review desk (same store and Temporal connection as the CLI) until SIGINT/SIGTERM')
    .option(
      '--listen <host:port>',
      `address (env EPISODES_REVIEW_LISTEN, default ${defaultText('EPISODES_REVIEW_LISTEN')})`,
    )
    .option('--insecure', 'allow plain HTTP on a non-loopback address (tokens and cookies then travel in clear)')
    .action(async (opts: { listen?: string; insecure?: boolean }) => {
      refuseFailpointsOutsideTests();
      const listen = parse('--listen', listenSchema, opts.listen ?? readSetting('EPISODES_REVIEW_LISTEN'));
      const settings = loadDeskSettings();
      const problem = listenProblem(listen.host, settings.publicUrl, opts.insecure === true);
      if (problem !== undefined) throw new PipelineError(ErrorType.InvalidInput, problem);
      const audit =
        settings.auditLog === 'stderr'
          ? AuditLog.toStderr()
          : AuditLog.toFile(settings.auditLog, settings.auditLogMaxBytes);
      const [store, reviewerStore] = [ctx.getStore(), reviewers()];
      const sessions = openReviewSessions(store);
      await checkDeskFiles(reviewerStore, sessions);
      const { startReviewDesk } = await import('../review/server.js');
      const desk = await startReviewDesk({
        ...listen,
        store,
        sessions,
        reviewers: reviewerStore,
        getClient: () => ctx.getClient(),
        budgetCents: ctx.config.budgetCents,
        timeZone: ctx.config.timezone,
        publicUrl: settings.publicUrl,
        trustProxy: settings.trustProxy,
        tokens: settings.tokens,
        oidc: settings.oidc,
        sessionSettings: settings.sessions,
        audit,
        limits: { maxConnections: settings.maxConnections },
      });
      const methods = [settings.tokens ? 'token' : null, settings.oidc ? `oidc (${settings.oidc.issuer.host})` : null];
      console.log(`review desk on ${desk.url}; sign-in: ${methods.filter((m) => m !== null).join(', ')}`);
      await untilSignal();
      await desk.close();
    });
}

function registerSessions(review: Command, ctx: CliContext, reviewers: () => ReviewerStore): void {
  review
    .command('sessions')
    .description(
      'list the open review sessions (read-only), end one with --revoke ID, or remove ended ones with --prune',
    )
    .option('--revoke <id>', 'end the session with this ID (or a unique prefix of 8 or more characters)')
    .option('--prune', 'remove the sessions that have ended (by time, or their reviewer removed or rotated)')
    .action(async (opts: { revoke?: string; prune?: boolean }) => {
      // The desk's own rule: a session past its end, or whose reviewer was removed or rotated, is gone, not listed.
      const settings = loadDeskSettings();
      const store = reviewers();
      const key = loadSessionKey(sessionKeyFile(store.file));
      const sessions = new DeskSessions(openReviewSessions(ctx.getStore()), settings.sessions, key);
      const oidc = settings.oidc === undefined ? undefined : new OidcSignIn(settings.oidc);
      const isCurrent = (s: ReviewSession) => sessionIsCurrent({ tokens: settings.tokens, reviewers: store }, oidc, s);
      if (opts.prune) {
        const ended = await sessions.prune(isCurrent);
        for (const s of ended) console.log(`session ${sessionHandle(s)} of ${s.reviewer} had ended; removed`);
        if (ended.length === 0) console.log('no ended sessions');
        return;
      }
      const all = await sessions.live(isCurrent);
      if (opts.revoke === undefined) {
        for (const s of all.sort((a, b) => a.created_at.localeCompare(b.created_at))) {
          console.log(
            `${sessionHandle(s)}  ${s.reviewer}  ${s.method}  from ${s.client_ip}  since ${s.created_at}  ` +
              `last seen ${s.last_seen_at}  ends by ${s.expires_at}`,
          );
        }
        if (all.length === 0) console.log('no open sessions');
        return;
      }
      const id = opts.revoke.toLowerCase();
      const matches = /^[0-9a-f]{8,64}$/.test(id) ? all.filter((s) => s.id_sha256.startsWith(id)) : [];
      if (matches.length !== 1) {
        throw new PipelineError(ErrorType.InvalidInput, `--revoke ${opts.revoke}: ${matches.length} sessions match`);
      }
      await sessions.store.delete(matches[0]!.id_sha256);
      console.log(`session ${sessionHandle(matches[0]!)} of ${matches[0]!.reviewer} ended`);
    });
}

function registerReviewers(review: Command, reviewers: () => ReviewerStore): void {
  review
    .command('add-reviewer')
    .description('add a reviewer and print their sign-in token once (only its hash is stored)')
    .argument('<name>')
    .action(async (name: string) => {
      const store = reviewers();
      const token = await store.add(name);
      console.log(`reviewer ${name} added (${store.file}); their token, shown only now:`);
      console.log(token);
    });

  review
    .command('rotate-reviewer')
    .description('give a reviewer a new token and print it once (the old token and its sessions stop working)')
    .argument('<name>')
    .action(async (name: string) => {
      const store = reviewers();
      const token = await store.rotate(name);
      console.log(`reviewer ${name} has a new token (${store.file}); the old one and its sessions no longer work:`);
      console.log(token);
    });

  review
    .command('remove-reviewer')
    .description("revoke a reviewer's token (their open sessions end at once)")
    .argument('<name>')
    .action(async (name: string) => {
      const store = reviewers();
      await store.remove(name);
      console.log(`reviewer ${name} removed (${store.file})`);
    });

  review
    .command('list-reviewers')
    .description('the reviewers who can sign in (names only)')
    .action(() => {
      for (const r of reviewers().list()) console.log(`${r.name}  added ${r.added_at}`);
    });
}

function parse<T>(flag: string, schema: z.ZodType<T>, raw: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new PipelineError(ErrorType.InvalidInput, `${flag}: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}
