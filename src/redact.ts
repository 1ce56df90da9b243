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
