/**
 * URLs in messages without their user info (`http://user:pass@host` → `http://***@host`): a URL
 * given to tend may carry a secret there, and every URL tend prints or logs goes through here.
 */

const userInfoInText = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;

/** The URL for messages: user info replaced by `***`, no trailing slash. Never throws. */
export function redactUrl(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.host === '' && url.includes('@'))) {
    // Not a URL with a host (a typo, a space, `user:pw@host`): still never show what could be
    // user info, up to the last "@".
    const at = url.lastIndexOf('@');
    if (at < 0) return url;
    const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
    return `${scheme}***${url.slice(at)}`;
  }
  const hadUserInfo = parsed.username !== '' || parsed.password !== '';
  parsed.username = '';
  parsed.password = '';
  const text = parsed.toString().replace(/\/+$/, '');
  return hadUserInfo ? text.replace('://', '://***@') : text;
}

/** A message (say, a library's error) with the user info of every URL in it replaced by `***`. */
export function redactUrlsIn(text: string): string {
  return text.replace(userInfoInText, '$1***@');
}

/**
 * The values of the project secrets a command read (`${secrets.*}`), as they may appear in text:
 * as they are and as JSON writes them inside a string. Printed errors and results, the local
 * event log and the outbox show `***` instead. Values shorter than 4 characters are left alone
 * (they would mask every such run of letters in the text).
 */
const secretForms = new Set<string>();
const secretMinLength = 4;

export function registerSecretValues(values: Iterable<string>): void {
  for (const value of values) {
    if (value.length < secretMinLength) continue;
    secretForms.add(value);
    secretForms.add(JSON.stringify(value).slice(1, -1));
  }
}

/** The text with every registered secret value replaced by `***` (the text itself when none is registered). */
export function redactSecretsIn(text: string): string {
  if (secretForms.size === 0) return text;
  let out = text;
  // Longest first: a value that contains another is masked whole.
  for (const form of [...secretForms].sort((a, b) => b.length - a.length)) {
    if (out.includes(form)) out = out.replaceAll(form, '***');
  }
  return out;
}
