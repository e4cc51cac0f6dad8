/** Signing in to a desk through Fastify's inject (no socket), as a browser would: pre-session cookie, CSRF, Origin. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

/** The origin inject's requests are addressed to (its default Host is localhost:80). */
export const INJECT_ORIGIN = 'http://localhost:80';

export interface InjectedSession {
  session: { value: string; httpOnly?: boolean; sameSite?: string; secure?: boolean };
  get(url: string): Promise<LightMyRequestResponse>;
}

export async function injectSignIn(app: FastifyInstance, token: string): Promise<InjectedSession> {
  const form = await app.inject({ method: 'GET', url: '/sign-in' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const pre = form.cookies.find((c) => c.name === 'episodes_review_sign_in')!;
  const res = await app.inject({
    method: 'POST',
    url: '/sign-in',
    headers: { origin: INJECT_ORIGIN },
    cookies: { episodes_review_sign_in: pre.value },
    payload: { token, _csrf: csrf },
  });
  if (res.statusCode !== 303) throw new Error(`sign-in: ${res.statusCode} ${res.body.slice(0, 300)}`);
  const session = res.cookies.find((c) => c.name === 'episodes_review_session')!;
  return {
    session,
    get: (url) => app.inject({ method: 'GET', url, cookies: { episodes_review_session: session.value } }),
  };
}
