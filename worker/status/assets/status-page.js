/*
 * The status page's script: sign-in, fetching /healthz with the token, rendering, refreshing.
 *
 * Why it works this way:
 * - A browser cannot send a bearer header on navigation, so the page is static and the script
 *   fetches /healthz with "Authorization: Bearer ...". The token lives in sessionStorage (gone
 *   when the tab closes), never in a URL, cookie or the DOM once used; the input has no name,
 *   and the CSP's form-action 'none' stops a script-less submit from putting it in a URL.
 * - Every value from the worker is rendered with textContent / text nodes, never as markup, so
 *   a hostile server name or error message shows as text (see status-page.test.ts).
 * - Refresh is a setTimeout chain (never two requests at once); a failed refresh keeps the last
 *   data and says so; a 401 (token revoked) signs out with a message.
 *
 * Plain ES2020, never transpiled: scripts/status-assets.mjs embeds this file, only minified, in
 * status-page-assets.generated.ts (npm run build runs it), so it never depends on how the worker
 * bundle is built.
 */
'use strict';
(function () {
  var KEY = 'switchyard.status.token';
  var REFRESH_MS = 5000;
  var token = null;
  var timer = null;
  var lastOk = null;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text, title) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (title) node.title = title;
    return node;
  }
  function cell(content, cls, title) {
    var td = el('td', cls, typeof content === 'string' || typeof content === 'number' ? content : null, title);
    if (content instanceof Node) td.append(content);
    return td;
  }
  function row(cells) { var tr = el('tr'); cells.forEach(function (c) { tr.append(c); }); return tr; }
  function fill(tbodyId, rows, columns, emptyText) {
    var body = $(tbodyId);
    body.replaceChildren();
    if (rows.length === 0) { var td = el('td', 'empty', emptyText); td.colSpan = columns; body.append(row([td])); return; }
    rows.forEach(function (r) { body.append(r); });
  }
  function pill(kind, text) { return el('span', 'pill ' + kind, text); }
  function ago(iso, nowIso) {
    var then = Date.parse(iso), now = Date.parse(nowIso);
    if (isNaN(then)) return '—';
    var s = Math.max(0, Math.round(((isNaN(now) ? Date.now() : now) - then) / 1000));
    if (s < 5) return 'just now';
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 172800) return Math.floor(s / 3600) + ' h ago';
    return Math.floor(s / 86400) + ' d ago';
  }
  function clock(date) { return date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }); }
  function list(value) { return Array.isArray(value) ? value : []; }

  var SERVER_STATES = { 'available': ['ok', 'Available'], 'failing': ['bad', 'Failing'], 'host-offline': ['warn', 'Host offline'], 'unsupported-policy': ['neutral', 'Unsupported policy'] };

  function binding(value) {
    var text = String(value);
    var span = el('span');
    if (text.indexOf('host:') === 0) { span.append(el('span', 'tag', 'host'), el('span', 'mono', text.slice(5))); }
    else span.append(el('span', 'tag', text));
    return span;
  }

  function render(report) {
    var admin = report.viewer && report.viewer.role === 'admin';
    var hosts = list(report.hosts), servers = list(report.servers), errors = list(report.recentErrors);
    var agent = report.viewer && report.viewer.agent;
    $('viewer').textContent = admin ? 'Signed in as admin' : typeof agent === 'string' ? 'Signed in as agent ' + agent : 'Signed in';
    $('scope').textContent = admin
      ? 'Every host, server and agent session on this worker.'
      : 'What this agent may use: its servers, the hosts they run on, and its own sessions.';
    var linked = hosts.filter(function (h) { return h.linked === true; }).length;
    var available = servers.filter(function (s) { return s.state === 'available'; }).length;
    $('stat-hosts').replaceChildren(String(linked), el('small', null, '/ ' + hosts.length));
    $('stat-hosts-note').textContent = hosts.length === 0 ? 'no hosts configured' : (hosts.length - linked) + ' offline';
    $('stat-servers').replaceChildren(String(available), el('small', null, '/ ' + servers.length));
    $('stat-servers-note').textContent = (servers.length - available) + ' unavailable';
    $('stat-sessions').textContent = String(report.sessions);
    $('stat-sessions-note').textContent = admin ? 'across all agents' : 'opened with this token';
    $('stat-errors').textContent = String(errors.length);
    $('stat-errors-card').classList.toggle('attention', errors.length > 0);

    fill('hosts-body', hosts.map(function (h) {
      return row([
        cell(String(h['entity-id']), 'mono'),
        cell(h.linked ? pill('ok', 'Linked') : pill('warn', 'Offline')),
        cell(h.since ? ago(h.since, report.time) : 'never linked', 'when', h.since ? String(h.since) : undefined),
        cell(typeof h.channels === 'number' ? h.channels : '\u2013', 'num'),
        cell(typeof h.roundTripMs === 'number' ? h.roundTripMs + ' ms' : '\u2013', 'num'),
      ]);
    }), 5, 'No hosts');

    fill('servers-body', servers.map(function (s) {
      var state = SERVER_STATES[s.state] || ['neutral', String(s.state)];
      var td = cell(pill(state[0], state[1]));
      // Why it is failing: its latest open's reason, when, and (for the admin) whose open it was; the message on hover.
      var f = s.failure;
      if (f && typeof f === 'object') td.append(el('span', 'why', String(f.reason) + ' ' + ago(f.time, report.time) + (typeof f.agent === 'string' ? ' (' + f.agent + ')' : ''), String(f.message)));
      return row([cell(String(s.name), 'mono'), cell(binding(s.binding)), td]);
    }), 3, 'No servers');

    $('sessions-panel').hidden = !admin;
    fill('sessions-body', list(report.sessionGroups).map(function (g) {
      return row([cell(String(g.agent), 'mono'), cell(String(g.endpoint), 'mono'), cell(Number(g.sessions) || 0, 'num'), cell(Number(g.channels) || 0, 'num')]);
    }), 4, 'No live sessions');

    $('errors-count').textContent = errors.length === 0 ? '' : 'newest first';
    fill('errors-body', errors.map(function (e) {
      var message = el('span', null, e.message);
      var td = cell(message, 'message');
      if (Number(e.count) > 1) td.append(el('span', 'count', '×' + Number(e.count)));
      return row([
        cell(ago(e.time, report.time), 'when', String(e.time)),
        cell(pill('bad', String(e.reason))),
        cell(e.server === null ? '—' : String(e.server), 'mono'),
        cell(e.agent === null ? '—' : String(e.agent), 'mono'),
        td,
      ]);
    }), 5, 'No recent errors: every server open and channel since start went fine (a refused call shows under Recent calls).');

    fill('calls-body', list(report.recentCalls).map(function (c) {
      var call = String(c.method === null ? '—' : c.method) + (c.name ? ' ' + String(c.name) : '');
      var decision = c.decision === 'allowed' ? pill('ok', 'allowed') : pill('bad', String(c.decision));
      var outcome = c.outcome === 'ok' ? pill('ok', 'ok') : c.outcome === 'input-required' ? pill('ok', 'input required') : pill('warn', String(c.reason || 'error'));
      return row([
        cell(ago(c.time, report.time), 'when', String(c.time)),
        cell(c.agent === null ? '—' : String(c.agent), 'mono'),
        cell(c.server === null ? '—' : String(c.server), 'mono'),
        cell(call, 'mono', c.traceId ? 'trace ' + String(c.traceId) : undefined),
        cell(decision),
        cell(outcome),
        cell(Number(c.durationMs) || 0, 'num'),
      ]);
    }), 7, 'No calls yet');
  }

  async function load(used) {
    var response;
    try {
      response = await fetch('/healthz', { headers: { authorization: 'Bearer ' + used }, cache: 'no-store', credentials: 'omit' });
    } catch (error) {
      return { kind: 'unreachable' };
    }
    if (response.status === 401) return { kind: 'unauthorized' };
    if (!response.ok) return { kind: 'http', status: response.status };
    var report = await response.json().catch(function () { return null; });
    if (!report || !Array.isArray(report.servers)) return { kind: 'http', status: response.status };
    return { kind: 'ok', report: report };
  }

  function failureText(result) {
    if (result.kind === 'unauthorized') return 'That token was not accepted (unauthorized): check the admin or agent token and try again.';
    if (result.kind === 'unreachable') return 'Cannot reach the worker: check that it is running, then try again.';
    return 'The worker answered HTTP ' + result.status + ': see its log.';
  }

  // `keepSaved`: the worker could not say whether the saved token is good (unreachable, an error):
  // it is kept for the next reload, and only a refusal (401) forgets it.
  function showSignIn(message, keepSaved) {
    clearTimeout(timer);
    token = null;
    if (!keepSaved) sessionStorage.removeItem(KEY);
    ['hosts-body', 'servers-body', 'sessions-body', 'errors-body', 'calls-body'].forEach(function (id) { $(id).replaceChildren(); });
    $('dashboard').hidden = true;
    $('session-bar').hidden = true;
    $('sign-in').hidden = false;
    $('sign-in-error').hidden = !message;
    $('sign-in-error').textContent = message || '';
    $('token').value = '';
    $('token').focus();
  }

  function showDashboard(report) {
    lastOk = new Date();
    render(report);
    $('sign-in').hidden = true;
    $('dashboard').hidden = false;
    $('session-bar').hidden = false;
    $('banner').hidden = true;
    $('live').classList.remove('stale');
    $('updated').textContent = 'Updated ' + clock(lastOk);
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, REFRESH_MS);
  }

  async function refresh() {
    var used = token;
    var result = await load(used);
    if (token === null || token !== used) return;
    if (result.kind === 'ok') showDashboard(result.report);
    else if (result.kind === 'unauthorized') return showSignIn('Your token is no longer accepted: sign in again.');
    else {
      $('banner').textContent = failureText(result) + ' Showing the status from ' + clock(lastOk) + '; retrying every ' + REFRESH_MS / 1000 + ' s.';
      $('banner').hidden = false;
      $('live').classList.add('stale');
    }
    schedule();
  }

  async function signIn(candidate) {
    if (candidate === '') return showSignIn('Paste the admin token or an agent token first.');
    if (!/^[\x21-\x7e]+$/.test(candidate)) return showSignIn('A token is one word of printable characters: paste it again.');
    $('sign-in-button').disabled = true;
    token = candidate;
    var result = await load(candidate);
    $('sign-in-button').disabled = false;
    if (token !== candidate) return;
    if (result.kind !== 'ok') return showSignIn(failureText(result), result.kind !== 'unauthorized');
    sessionStorage.setItem(KEY, candidate);
    $('token').value = '';
    showDashboard(result.report);
    schedule();
  }

  $('sign-in-form').addEventListener('submit', function (event) {
    event.preventDefault();
    void signIn($('token').value.trim());
  });
  $('sign-out').addEventListener('click', function () { showSignIn(''); });
  document.addEventListener('visibilitychange', function () {
    if (document.visibilityState === 'visible' && token !== null) { clearTimeout(timer); void refresh(); }
  });
  $('endpoint').textContent = location.origin + '/mcp';

  var saved = sessionStorage.getItem(KEY);
  if (saved) void signIn(saved); else showSignIn('');
})();
