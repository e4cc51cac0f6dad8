/** Signing in to a desk through Fastify's inject (no socket), as a browser would: pre-session cookie, CSRF, Origin. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { deskCookies, type DeskCookies } from '../../../src/review/sessions';

/** The origin inject's requests are addressed to (its default Host is localhost:80). */
export const INJECT_ORIGIN = 'http://localhost:80';

export interface InjectedSession {
  session: { value: string; httpOnly?: boolean; sameSite?: string; secure?: boolean; path?: string };
  get(url: string): Promise<LightMyRequestResponse>;
}

/** `names` and `origin`: the desk's cookie names and origin (an https public URL gives `__Host-` names). */
export async function injectSignIn(
  app: FastifyInstance,
  token: string,
  { names = deskCookies(false), origin = INJECT_ORIGIN }: { names?: DeskCookies; origin?: string } = {},
): Promise<InjectedSession> {
  const form = await app.inject({ method: 'GET', url: '/sign-in' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const pre = form.cookies.find((c) => c.name === names.signIn)!;
  const res = await app.inject({
    method: 'POST',
    url: '/sign-in',
    headers: { origin },
    cookies: { [names.signIn]: pre.value },
    payload: { token, _csrf: csrf },
  });
  if (res.statusCode !== 303) throw new Error(`sign-in: ${res.statusCode} ${res.body.slice(0, 300)}`);
  const session = res.cookies.find((c) => c.name === names.session)!;
  return {
    session,
    get: (url) => app.inject({ method: 'GET', url, cookies: { [names.session]: session.value } }),
  };
}
