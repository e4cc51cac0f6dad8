/** The pages a visitor sees before signing in, and the generic error page: rendered through `html`'s escaping. */
import { html, page, type SafeHtml } from './html';
import type { Viewer } from './pages';

export interface SignInOptions {
  csrf: string;
  tokens: boolean;
  /** The provider's button label (its host), when OIDC sign-in is on. */
  oidc?: string;
  problem: string | null;
}

export function signInPage(o: SignInOptions): SafeHtml {
  const hidden = html`<input type="hidden" name="_csrf" value="${o.csrf}" />`;
  return page(
    'Sign in',
    html`<h1>Sign in</h1>
      ${o.problem ? html`<p class="notice refused" role="alert">${o.problem}</p>` : null}
      ${
        o.oidc
          ? html`<form method="post" action="/sign-in/oidc">
              ${hidden}
              <button type="submit">Sign in with ${o.oidc}</button>
            </form>`
          : null
      }
      ${
        o.tokens
          ? html`<form method="post" action="/sign-in">
                ${hidden}
                <p>
                  <label for="token">Token</label><br />
                  <input id="token" name="token" type="password" autocomplete="current-password" size="60" required />
                </p>
                <button type="submit">Sign in</button>
              </form>
              <p>A reviewer's token comes from <code>npx episodes review add-reviewer NAME</code>.</p>`
          : null
      }`,
    null,
  );
}

/** After the provider's redirect: a same-site page that moves on, so the SameSite=Strict session cookie is sent. */
export function signedInPage(name: string): SafeHtml {
  return page(
    'Signed in',
    html`<meta http-equiv="refresh" content="0;url=/" />
      <h1>Signed in</h1>
      <p>Signed in as ${name}. <a href="/">Continue to the waiting list</a></p>`,
    null,
  );
}

/** Every unexpected error: an incident id to quote, the detail only in the audit log. */
export function incidentPage(status: number, incident: string, viewer: Viewer | null): SafeHtml {
  const title = status >= 500 ? 'Something went wrong' : 'Request refused';
  return page(
    title,
    html`<h1>${title}</h1>
      <p>
        The desk could not answer this request (${status}). Incident <code>${incident}</code>: the operator finds the
        detail in the desk's audit log.
      </p>
      <p><a href="/">Back to the waiting list</a></p>`,
    viewer,
  );
}
