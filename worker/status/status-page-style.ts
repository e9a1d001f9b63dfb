/**
 * The status page's stylesheet, inlined under the page's CSP nonce (no external assets, so the
 * page works on an air-gapped worker and its CSP can stay `default-src 'none'`).
 *
 * Designed for a laptop screen first (1280×800 shows every section without scrolling for a
 * handful of hosts and servers) and degrading to one column on narrow windows. Colours carry
 * meaning only together with a word (“Linked”, “Offline”), never alone.
 *
 * @module
 */

export const STATUS_PAGE_CSS = `
:root {
  --bg: #f4f6f9; --card: #fff; --line: #e4e8ee; --text: #17202e; --muted: #5d6879; --faint: #8a94a4;
  --accent: #4263eb; --accent-dark: #3451c7; --top: #0f172a;
  --ok-bg: #e5f5eb; --ok: #1d7a3e; --warn-bg: #fff3df; --warn: #95580a; --bad-bg: #fdecec; --bad: #b4271b;
  --neutral-bg: #eef1f6; --neutral: #475467;
  --sans: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html, body { margin: 0; }
body { background: var(--bg); color: var(--text); font: 14px/1.45 var(--sans); -webkit-font-smoothing: antialiased; }
code, .mono { font-family: var(--mono); font-size: 12.5px; }
h1, h2 { margin: 0; font-weight: 600; letter-spacing: -0.01em; }

.topbar { display: flex; align-items: center; justify-content: space-between; gap: 16px;
  height: 56px; padding: 0 28px; background: var(--top); color: #e8ecf3; }
.brand { display: flex; align-items: center; gap: 10px; }
.brand-name { font-weight: 650; font-size: 16px; color: #fff; }
.brand-sub { color: #9aa5b8; font-size: 13px; padding-left: 10px; border-left: 1px solid #334155; }
.session-bar { display: flex; align-items: center; gap: 14px; font-size: 13px; color: #b8c2d3; }
.viewer { padding: 3px 10px; border-radius: 999px; background: #1e293b; color: #e2e8f0; font-weight: 500; }
.live-dot { display: inline-block; width: 7px; height: 7px; border-radius: 50%; background: #34d399; margin-right: 6px; vertical-align: 1px; }
.live-dot.stale { background: #f59e0b; }

main { max-width: 1200px; margin: 0 auto; padding: 20px 28px 40px; }
.btn { font: inherit; font-weight: 550; border-radius: 8px; padding: 8px 14px; cursor: pointer; border: 1px solid transparent; }
.btn-primary { background: var(--accent); color: #fff; width: 100%; padding: 10px 14px; }
.btn-primary:hover { background: var(--accent-dark); }
.btn-primary:disabled { opacity: 0.7; cursor: progress; }
.btn-quiet { background: transparent; color: #cbd5e1; border-color: #334155; padding: 5px 12px; }
.btn-quiet:hover { background: #1e293b; color: #fff; }
.muted { color: var(--muted); }

.sign-in { display: flex; justify-content: center; padding-top: 9vh; }
.sign-in-card { width: 400px; padding: 30px 30px 24px; }
.sign-in-card h1 { font-size: 20px; margin-bottom: 6px; }
.sign-in-card p.muted { margin: 0 0 20px; }
.sign-in-card label { display: block; font-weight: 550; font-size: 13px; margin-bottom: 6px; }
.sign-in-card input { width: 100%; font: 14px var(--mono); padding: 9px 11px; border: 1px solid #cdd4de; border-radius: 8px; margin-bottom: 14px; }
.sign-in-card input:focus { outline: 2px solid #b7c5fa; border-color: var(--accent); }
.form-error { margin: -4px 0 14px; padding: 9px 11px; border-radius: 8px; background: var(--bad-bg); color: var(--bad); font-size: 13px; }
.fine { margin: 16px 0 0; font-size: 12px; color: var(--faint); }

.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; box-shadow: 0 1px 2px rgba(16, 24, 40, 0.04); }
.page-head { display: flex; align-items: center; justify-content: space-between; gap: 16px; margin-bottom: 14px; }
.page-head .title { display: flex; align-items: baseline; gap: 12px; }
.page-head h1 { font-size: 20px; }
.page-head p { margin: 0; }
.endpoint { font-size: 13px; color: var(--muted); text-align: right; }
.endpoint code { display: inline-block; margin-left: 6px; padding: 3px 8px; background: #fff; border: 1px solid var(--line); border-radius: 6px; color: var(--text); }
.banner { margin-bottom: 14px; padding: 10px 14px; border-radius: 10px; background: var(--warn-bg); color: var(--warn); border: 1px solid #f5d9a8; }

.summary { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; margin-bottom: 12px; }
.stat { padding: 12px 16px; }
.stat-label { font-size: 12px; font-weight: 550; text-transform: uppercase; letter-spacing: 0.05em; color: var(--muted); }
.stat-value { font-size: 24px; font-weight: 650; line-height: 1.3; font-variant-numeric: tabular-nums; }
.stat-value small { font-size: 15px; font-weight: 500; color: var(--faint); margin-left: 3px; }
.stat-note { font-size: 12.5px; color: var(--muted); }
.stat.attention .stat-value { color: var(--bad); }

.grid { display: grid; grid-template-columns: 5fr 6fr; gap: 12px; align-items: start; margin-bottom: 12px; }
.column { display: flex; flex-direction: column; gap: 12px; }
.panel { margin-bottom: 12px; overflow: hidden; }
.grid .panel { margin-bottom: 0; }
.panel-head { display: flex; align-items: baseline; justify-content: space-between; padding: 11px 16px 10px; border-bottom: 1px solid var(--line); }
.panel-head h2 { font-size: 14.5px; }
.panel-head span { font-size: 12.5px; color: var(--faint); }
table { width: 100%; border-collapse: collapse; }
th { text-align: left; font-size: 11.5px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.05em; color: var(--faint);
  padding: 7px 16px; background: #fafbfc; border-bottom: 1px solid var(--line); }
td { padding: 7px 16px; border-bottom: 1px solid #eef1f5; vertical-align: middle; }
tr:last-child td { border-bottom: none; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.empty { color: var(--faint); text-align: center; padding: 18px 16px; }
td.message { color: #344054; word-break: break-word; line-height: 1.4; }
td.when { white-space: nowrap; color: var(--muted); }

.pill { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 12px; font-weight: 550; white-space: nowrap; }
.pill.ok { background: var(--ok-bg); color: var(--ok); }
.pill.warn { background: var(--warn-bg); color: var(--warn); }
.pill.bad { background: var(--bad-bg); color: var(--bad); font-family: var(--mono); font-weight: 500; }
.pill.neutral { background: var(--neutral-bg); color: var(--neutral); }
.tag { display: inline-block; padding: 0 6px; margin-right: 6px; border-radius: 4px; font-size: 11.5px; background: var(--neutral-bg); color: var(--neutral); }
.count { display: inline-block; margin-left: 6px; padding: 0 6px; border-radius: 999px; font-size: 11.5px; background: var(--neutral-bg); color: var(--neutral); }

@media (max-width: 900px) {
  .summary { grid-template-columns: repeat(2, 1fr); }
  .grid { grid-template-columns: 1fr; }
  .grid .panel { margin-bottom: 0; }
  .page-head { flex-direction: column; align-items: flex-start; }
  .endpoint { text-align: left; }
}
`;
