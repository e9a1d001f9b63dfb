import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { minifyAsset, statusAssetsCurrent } from '../../scripts/status-assets.mjs';
import { PAGE_ASSETS_DEFLATED } from './status-page-assets.generated.ts';
import { fillTemplate, htmlWithAssets, statusPageAssets } from './status-page-assets.ts';

const minify = minifyAsset as (text: string, loader: 'js' | 'css') => string;
const asset = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8');

describe('status page assets', () => {
  it('the generated module is what scripts/status-assets.mjs makes of the asset files now (run npm run build after editing them)', () => {
    const current = (statusAssetsCurrent as () => boolean)();
    expect(current, 'worker/status/status-page-assets.generated.ts is stale: run npm run build (or node scripts/status-assets.mjs)').toBe(true);
  });

  it('holds the asset files (script and stylesheet minified) deflated: inflated, their code and rules are there, their comments and indentation gone', async () => {
    const { script: STATUS_PAGE_SCRIPT, css: STATUS_PAGE_CSS, consentCss, templates } = await statusPageAssets();
    // The markup as written, but for the file's final line break.
    expect(templates.statusPage).toBe(asset('status-page.html').trimEnd());
    expect(templates.page).toBe(asset('page.html').trimEnd());
    expect(templates.logo).toBe(asset('logo.svg').trimEnd());
    expect(templates.consentError).toBe(asset('consent-error.html').trimEnd());
    expect(Object.values(templates).every((text) => text.startsWith('<'))).toBe(true);
    expect(STATUS_PAGE_SCRIPT).toBe(minify(asset('status-page.js'), 'js'));
    expect(STATUS_PAGE_CSS).toBe(minify(asset('status-page.css'), 'css'));
    expect(consentCss).toBe(minify(asset('consent-page.css'), 'css'));
    expect(consentCss).toContain('.btn-deny');
    expect(consentCss).not.toContain('consent-page.ts');
    expect(STATUS_PAGE_SCRIPT.length).toBeLessThan(asset('status-page.js').length * 0.7);
    expect(STATUS_PAGE_SCRIPT).not.toContain('Why it works this way');
    // Strings and selectors the page's HTML and /healthz depend on survive minifying.
    expect(STATUS_PAGE_SCRIPT).toContain('switchyard.status.token');
    expect(STATUS_PAGE_SCRIPT).toContain('/healthz');
    expect(STATUS_PAGE_CSS).toContain('.sign-in-card');
  });

  it('stores them in about a third of the files\' size, and inflates them once', async () => {
    const files = ['status-page.js', 'status-page.css', 'consent-page.css', 'page.html', 'status-page.html', 'consent-sign-in.html', 'consent-approve.html'];
    expect(PAGE_ASSETS_DEFLATED.length).toBeLessThan(files.reduce((sum, file) => sum + asset(file).length, 0) / 2.5);
    expect(statusPageAssets()).toBe(statusPageAssets());
  });

  it('renders a page body once the assets are inflated', async () => {
    const { css } = await statusPageAssets();
    const text = await new Response(htmlWithAssets((assets) => `<style>${assets.css}</style>—`)).text();
    expect(text).toBe(`<style>${css}</style>—`);
  });

  it('fills a template in one pass: values are inserted as they are, never read as placeholders, and a missing one throws', () => {
    expect(fillTemplate('<p title="{{a}}">{{b-c}}</p>{{a}}', { a: '{{b-c}}', 'b-c': '$& $1' })).toBe('<p title="{{b-c}}">$& $1</p>{{b-c}}');
    expect(() => fillTemplate('<p>{{missing}}</p>', { present: 'x' })).toThrow('Template placeholder {{missing}} has no value');
    expect(() => fillTemplate('<p>{{constructor}}</p>', {})).toThrow('Template placeholder {{constructor}} has no value');
  });

  it('minifies without lowering syntax the file does not use', () => {
    expect(minify('const f = async (a) => a ?? 1;', 'js')).toMatch(/^const f=async (\w)=>\1\?\?1;$/);
    expect(minify('a {\n  color: #ffffff;\n}\n', 'css')).toBe('a{color:#fff}');
  });
});
