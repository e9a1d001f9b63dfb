/**
 * The status page's script, stylesheet and `<main>` markup, and the consent pages' stylesheet
 * (they also use the status page's), stored deflated together in status-page-assets.generated.ts
 * to keep dist/worker.js small (issue 17) and inflated once, when a page first needs them, with
 * the web-standard DecompressionStream (Deno, Node, workerd). Pages stay synchronous to build: `htmlWithAssets` is a response body that renders
 * its HTML as soon as the assets are there.
 *
 * @module
 */
import { PAGE_ASSETS_DEFLATED } from './status-page-assets.generated.ts';

export interface StatusPageAssets {
  script: string;
  css: string;
  /** The consent pages' own rules, after `css`. */
  consentCss: string;
  /** The status page's `<main>` element. */
  main: string;
}

let inflated: Promise<StatusPageAssets> | undefined;

async function inflate(base64: string): Promise<string> {
  const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))).text();
}

/** The assets as text; inflated on the first call, the same promise after. */
export function statusPageAssets(): Promise<StatusPageAssets> {
  // In the order scripts/status-assets.mjs joins them.
  inflated ??= inflate(PAGE_ASSETS_DEFLATED).then((text) => {
    const [script, css, consentCss, main] = text.split('\0') as [string, string, string, string];
    return { script, css, consentCss, main };
  });
  return inflated;
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
