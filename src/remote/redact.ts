/**
 * URLs in messages without their user info (`http://user:pass@host` → `http://***@host`): a URL
 * given to tend may carry a secret there, and every URL tend prints or logs goes through here.
 */

const userInfoInText = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;

/** The URL for messages: user info replaced by `***`, no trailing slash. Never throws. */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL: still never show what could be user info.
    return redactUrlsIn(url);
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
