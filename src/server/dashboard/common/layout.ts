/**
 * The frame of every dashboard page (style, header with the navigation and "Log out") and the
 * pages that only say something: a message ("Not found", "Forbidden") and "No access yet".
 */
import { html, raw, type Html } from './html.js';

const style = raw(`
  :root { font-family: system-ui, sans-serif; color: #1b1f24; }
  body { margin: 0; }
  header { background: #1f3a5f; color: #fff; padding: .6rem 1.2rem; display: flex; gap: 1rem; align-items: center; }
  header a { color: #fff; text-decoration: none; font-weight: 600; }
  header form { margin-left: auto; }
  main { padding: 1rem 1.2rem; }
  table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.2rem; }
  th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #d8dee4; vertical-align: top; }
  th { background: #f3f5f7; font-weight: 600; }
  .muted { color: #57606a; font-size: .9em; }
  .badge { display: inline-block; padding: 0 .45rem; border-radius: .6rem; font-size: .85em; background: #eaeef2; }
  .badge.active { background: #dafbe1; } .badge.cleaned { background: #eaeef2; } .badge.protected { background: #fff1c2; }
  .actions { display: flex; gap: .6rem; margin: .6rem 0 1rem; flex-wrap: wrap; }
  .actions form { display: inline; }
  button, a.button { padding: .3rem .8rem; cursor: pointer; }
  a.button { display: inline-block; border: 1px solid #8c959f; border-radius: .3rem; background: #f6f8fa; color: inherit; text-decoration: none; }
  .error { color: #b3261e; }
  form.filters { display: flex; gap: .6rem; align-items: end; margin-bottom: .6rem; }
  label { display: flex; flex-direction: column; font-size: .85em; gap: .15rem; }
  header nav { display: flex; gap: 1rem; } header nav a { font-weight: 400; }
  .badge.kind-due { background: #ffd8d3; } .badge.kind-scheduled { background: #ddf4ff; }
  .badge.kind-dry-run { background: #fbefff; } .badge.kind-blocked { background: #fff1c2; }
  .badge.delivery-delivered { background: #dafbe1; } .badge.delivery-pending { background: #fff1c2; }
  .badge.delivery-failed { background: #ffd8d3; }
  .badge.mode-enforced, .badge.job-done { background: #dafbe1; } .badge.mode-dry-run { background: #fbefff; }
  .badge.job-failed { background: #ffd8d3; } .badge.job-planned, .badge.job-executing { background: #ddf4ff; }
  .sentence { max-width: 32rem; }
  section.halted { border-left: 4px solid #b3261e; padding-left: .8rem; }
  section.running { border-left: 4px solid #1a7f37; padding-left: .8rem; }
  td form { display: inline; }
  td time, .next { white-space: nowrap; }
  form.filters { flex-wrap: wrap; }
  nav.counts { display: flex; gap: .4rem; flex-wrap: wrap; margin: .2rem 0 .6rem; }
  nav.counts a { text-decoration: none; color: inherit; padding: .15rem .6rem; border: 1px solid #d8dee4; border-radius: 1rem; }
  nav.counts a[aria-current="page"] { background: #1f3a5f; color: #fff; border-color: #1f3a5f; }
  figure.chart { margin: .4rem 0 1rem; max-width: 40rem; }
  figure.chart figcaption { font-size: .9em; color: #57606a; }
  figure.chart svg { width: 100%; height: auto; display: block; }
  .legend { display: flex; gap: 1rem; flex-wrap: wrap; font-size: .85em; margin: .2rem 0; }
  .legend i { display: inline-block; width: .8em; height: .8em; margin-right: .3em; border-radius: 2px; }
  .scroll { overflow-x: auto; }
  @media (max-width: 640px) {
    header { flex-wrap: wrap; padding: .5rem .8rem; }
    main { padding: .6rem .8rem; }
    form.filters label, form.filters input, form.filters select { width: 100%; box-sizing: border-box; }
    main table:not(.cards) { display: block; overflow-x: auto; }
    table.cards thead { display: none; }
    table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; width: 100%; box-sizing: border-box; }
    table.cards tr { border: 1px solid #d8dee4; border-radius: .4rem; margin-bottom: .6rem; padding: .3rem 0; }
    table.cards td { border: none; padding: .15rem .6rem .15rem 7.4rem; position: relative; overflow-wrap: anywhere; min-height: 1.2em; }
    table.cards td[data-label]::before { content: attr(data-label); position: absolute; left: .6rem; width: 6.4rem; font-size: .8em; line-height: 1.6; color: #57606a; }
  }
`);

export function layout(title: string, body: Html, options: { csrf?: string; user?: string } = {}): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · tend</title>
        <style>
          ${style}
        </style>
      </head>
      <body>
        <header>
          <a href="/">tend</a>
          <nav><a href="/">Environments</a><a href="/cleanup">Cleanup</a><a href="/savings">Savings</a></nav>
          ${
            options.csrf
              ? html`<form method="post" action="/logout">
                  <input type="hidden" name="_csrf" value="${options.csrf}" /><span
                    class="muted"
                    style="color:#cfd8e3"
                    >${options.user ?? ''}</span
                  >
                  <button type="submit">Log out</button>
                </form>`
              : ''
          }
        </header>
        <main>${body}</main>
      </body>
    </html>`;
}

export function messagePage(title: string, message: string, session?: { csrf: string; user: string }): Html {
  return layout(
    title,
    html`<h1>${title}</h1>
      <p class="error" role="alert">${message}</p>
      <p><a href="/">Back</a></p>`,
    session,
  );
}

/** A person signed in whom the roles file gives no role. */
export function noRolePage(session: { csrf: string; user: string }): Html {
  return layout(
    'No access yet',
    html`<h1>No access yet</h1>
      <p class="error" role="alert" id="no-role">
        You are signed in as ${session.user.replace(/ \(no role\)$/, '')}, but none of your groups or your
        e-mail address has a role on this tend server. Ask your platform team to give you one (they map groups
        and e-mail addresses to roles in the server's roles file).
      </p>`,
    session,
  );
}
