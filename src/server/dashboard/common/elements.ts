/** Small pieces every page uses: a POST form with the CSRF token, a time for people, who did what. */
import type { EnvironmentView } from '../../../api/views.js';
import { html, relativeTime, type Html } from './html.js';

/** The session as forms and the header need it. */
export interface PageSession {
  csrf: string;
  user: string;
}

/** A POST form carrying the session's CSRF token. */
export function postForm(
  session: PageSession,
  action: string,
  label: string,
  fields: Record<string, string> = {},
  extra: Html | string = '',
): Html {
  return html`<form method="post" action="${action}">
    <input type="hidden" name="_csrf" value="${session.csrf}" />${Object.entries(fields).map(
      ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
    )}${extra}<button type="submit">${label}</button>
  </form>`;
}

export function when(iso: string, now: Date): Html {
  return html`<time datetime="${iso}" title="${iso}">${relativeTime(iso, now)}</time>`;
}

export function activitySource(a: EnvironmentView['lastActivity']): string {
  const parts: string[] = [];
  if (a.command) parts.push(`tend ${a.command}`);
  else if (a.type) parts.push(a.type);
  if (a.user) parts.push(`by ${a.user}`);
  return parts.join(' ');
}
