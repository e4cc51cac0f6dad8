/**
 * Server-rendered HTML with escaping on by default: every value interpolated into `html` is escaped unless it is
 * itself the output of `html` (a `SafeHtml`). There is no way to mark an arbitrary string safe, so reviewer names,
 * notes and ids can only ever reach a page as text.
 */
const TRUSTED = Symbol('trusted');

/** Only this module makes one. */
export class SafeHtml {
  private constructor(
    readonly text: string,
    token: symbol,
  ) {
    if (token !== TRUSTED) throw new Error('SafeHtml is made by html`...` only');
  }
  static [TRUSTED](text: string): SafeHtml {
    return new SafeHtml(text, TRUSTED);
  }
  toString(): string {
    return this.text;
  }
}

type Value = SafeHtml | string | number | boolean | null | undefined | readonly Value[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: Value): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((v, i) => (out += render(v) + strings[i + 1]!));
  return SafeHtml[TRUSTED](out);
}

/** A whole page. `user` is the signed-in reviewer (null on the sign-in page); `csrf` signs the sign-out form. */
export function page(title: string, body: SafeHtml, user: { name: string; csrf: string } | null): SafeHtml {
  const nav = user
    ? html`<a href="/">Waiting</a><a href="/done">Done</a>
        <form method="post" action="/sign-out">
          <span>${user.name}</span> <input type="hidden" name="_csrf" value="${user.csrf}" />
          <button type="submit">Sign out</button>
        </form>`
    : html``;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · review desk</title>
        <link rel="stylesheet" href="/assets/desk.css" />
      </head>
      <body>
        <header><strong>Review desk</strong>${nav}</header>
        <main>${body}</main>
      </body>
    </html>`;
}
