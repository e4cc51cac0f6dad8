/** `episodes review …`: the review desk (serve) and its reviewers (add-reviewer, remove-reviewer, list-reviewers). */
import type { Command } from 'commander';
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { loadReviewPublicUrl } from '../process/review-notice-config';
import { ReviewerStore, reviewersFile } from '../review/reviewers';
import { startReviewDesk } from '../review/server';
import { readSettings } from '../settings/read';
import { defaultText } from '../settings/reference';
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

  review
    .command('serve')
    .description('serve the review desk (same store and Temporal connection as the CLI) until SIGINT/SIGTERM')
    .option(
      '--listen <host:port>',
      `address (env EPISODES_REVIEW_LISTEN, default ${defaultText('EPISODES_REVIEW_LISTEN')})`,
    )
    .action(async (opts: { listen?: string }) => {
      const settings = readSettings(['EPISODES_REVIEW_LISTEN', 'EPISODES_REVIEW_TRUST_PROXY']);
      const listen = parse('--listen', listenSchema, opts.listen ?? settings.EPISODES_REVIEW_LISTEN);
      const desk = await startReviewDesk({
        ...listen,
        store: ctx.getStore(),
        reviewers: reviewers(),
        getClient: () => ctx.getClient(),
        budgetCents: ctx.config.budgetCents,
        timeZone: ctx.config.timezone,
        publicUrl: loadReviewPublicUrl(),
        trustProxy: settings.EPISODES_REVIEW_TRUST_PROXY,
      });
      console.log(`review desk on ${desk.url} (reviewers: ${reviewers().file})`);
      await untilSignal();
      await desk.close();
    });

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
