/**
 * The status page's script and stylesheet, the consent pages' stylesheet (they also use the status
 * page's), and both pages' markup as templates, stored deflated together in
 * status-page-assets.generated.ts to keep dist/worker.js small (issue 17) and inflated once, when a
 * page first needs them, with the web-standard DecompressionStream (Deno, Node, workerd). Pages
 * stay synchronous to build: `htmlWithAssets` is a response body that renders its HTML as soon as
 * the assets are there.
 *
 * @module
 */
import { PAGE_ASSETS_BYTES, PAGE_ASSETS_DEFLATED } from './status-page-assets.generated.ts';

/** The markup files of worker/status/assets/, templates for `fillTemplate`. */
export interface PageTemplates {
  /** A whole page: `referrer`, `title`, `favicon`, `nonce`, `css` and `body`. */
  page: string;
  /** The mark in the top bar and the tab icon. */
  logo: string;
  /** The status page's body: `brand`, `nonce` and `script`. */
  statusPage: string;
  /** A consent page's body: `brand` and `form`. */
  consentPage: string;
  /** The facts about a client: `client-name`, `client-id`, `redirect-host` and `loopback-warning`. */
  consentClient: string;
  consentLoopbackWarning: string;
  /** `client`, `consent`, `csrf` and `error`. */
  consentSignIn: string;
  /** `client-name`, `signed-in-as`, `client`, `resource`, `consent`, `csrf` and `options`. */
  consentApprove: string;
  /** `code` and `message`. */
  consentError: string;
}

export interface StatusPageAssets {
  script: string;
  css: string;
  /** The consent pages' own rules, after `css`. */
  consentCss: string;
  templates: PageTemplates;
}

let inflated: Promise<StatusPageAssets> | undefined;

/** Z85 (ZeroMQ RFC 32), as scripts/status-assets.mjs writes the deflated bytes: 5 characters for 4 bytes. */
const Z85 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';

function decodeZ85(text: string, length: number): Uint8Array<ArrayBuffer> {
  const view = new DataView(new ArrayBuffer((text.length / 5) * 4));
  for (let i = 0; i < text.length; i += 5) {
    let value = 0;
    for (let j = i; j < i + 5; j++) value = value * 85 + Z85.indexOf(text[j]!);
    view.setUint32((i / 5) * 4, value);
  }
  return new Uint8Array(view.buffer, 0, length);
}

async function inflate(text: string, length: number): Promise<string> {
  return new Response(new Blob([decodeZ85(text, length)]).stream().pipeThrough(new DecompressionStream('deflate'))).text();
}

/** The markup files after the stylesheets, in the order scripts/status-assets.mjs joins them. */
const TEMPLATE_NAMES = ['page', 'logo', 'statusPage', 'consentPage', 'consentClient', 'consentLoopbackWarning', 'consentSignIn', 'consentApprove', 'consentError'] as const;

/** The assets as text; inflated on the first call, the same promise after. */
export function statusPageAssets(): Promise<StatusPageAssets> {
  inflated ??= inflate(PAGE_ASSETS_DEFLATED, PAGE_ASSETS_BYTES).then((text) => {
    const parts = text.split('\0');
    // A generated module out of step with this list would otherwise serve blank pages with a 200.
    if (parts.length !== 3 + TEMPLATE_NAMES.length) throw new Error(`Status page assets hold ${parts.length} parts, not ${3 + TEMPLATE_NAMES.length}: run npm run build`);
    const [script, css, consentCss, ...markup] = parts as [string, string, string, ...string[]];
    const templates = Object.fromEntries(TEMPLATE_NAMES.map((name, i) => [name, markup[i]!])) as Record<keyof PageTemplates, string>;
    return { script, css, consentCss, templates };
  });
  return inflated;
}

/**
 * `template` with each `{{name}}` replaced by `values[name]`, which is HTML as is: the caller
 * escapes what it takes from outside. One pass over the template only, so a value that holds
 * `{{…}}` stays as it is; a placeholder without a value is a bug, and throws.
 */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([a-z-]+)\}\}/g, (_, name: string) => {
    if (!Object.hasOwn(values, name)) throw new Error(`Template placeholder {{${name}}} has no value`);
    return values[name]!;
  });
}

/** A response body: the UTF-8 of `render(assets)`, once the assets are inflated. */
export function htmlWithAssets(render: (assets: StatusPageAssets) => string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(render(await statusPageAssets())));
      controller.close();
    },
  });
}
