/**
 * Which upstream serves a resource URI on the aggregate endpoint.
 *
 * Resource URIs are passed through unchanged (they are identifiers the servers chose, often
 * `file://` paths, and rewriting them would break links between results). Reads are routed by
 * what the list results said: an exact URI first, then the servers' URI templates, then, when
 * only one server offers resources at all, that server.
 *
 * @module
 */
import { compileUriTemplate, MATCH_WORK } from './uri-template-match.ts';

/**
 * The most work one URI's routing may take over every template tried (`MATCH_WORK` bounds one
 * match): a server listing a thousand templates of the worst kind would otherwise hold the
 * worker's thread for seconds on a long URI. Past it the URI routes by no template.
 */
export const ROUTE_WORK = 4 * MATCH_WORK;

export class ResourceRoutes {
  readonly #byUri = new Map<string, string>();
  /** `cost`: what a match costs per character of the URI (the template's length, plus one). */
  #templates: Array<{ server: string; matches: (uri: string) => boolean; cost: number }> = [];

  /** Records the URIs a server listed; the first server to list a URI keeps it. */
  addResources(server: string, uris: readonly string[]): void {
    for (const uri of uris) if (!this.#byUri.has(uri)) this.#byUri.set(uri, server);
  }

  addTemplates(server: string, templates: readonly string[]): void {
    for (const text of templates) {
      try {
        this.#templates.push({ server, matches: compileUriTemplate(text), cost: text.length + 1 });
      } catch {
        // A template that does not parse cannot route anything; its exact URIs still can.
      }
    }
  }

  clearResources(server: string): void {
    for (const [uri, owner] of this.#byUri) if (owner === server) this.#byUri.delete(uri);
  }

  clearTemplates(server: string): void {
    this.#templates = this.#templates.filter((t) => t.server !== server);
  }

  /**
   * The server for `uri` among `candidates` (servers offering resources), or undefined. A URI a
   * server that is not a candidate (down, still opening) named, in its list or by a template, is
   * that server's: never given to another (`owner` says whose it is). Without `soleServer`, a URI
   * no list names is not given to the one candidate either: a server not among the candidates yet
   * (still opening) may be the one serving it.
   */
  route(uri: string, candidates: readonly string[], soleServer = true): string | undefined {
    const exact = this.#byUri.get(uri);
    if (exact !== undefined) return candidates.includes(exact) ? exact : undefined;
    const matched = this.#matching(uri, candidates);
    if (matched !== undefined) return matched;
    return soleServer && candidates.length === 1 && this.#matching(uri) === undefined ? candidates[0] : undefined;
  }

  /** The server whose list, else whose templates, named `uri`, whether it is up or not. */
  owner(uri: string): string | undefined {
    return this.#byUri.get(uri) ?? this.#matching(uri);
  }

  /** The first server (among `candidates`, when given) with a template matching `uri`, within `ROUTE_WORK`. */
  #matching(uri: string, candidates?: readonly string[]): string | undefined {
    let work = 0;
    for (const { server, matches, cost } of this.#templates) {
      if (candidates !== undefined && !candidates.includes(server)) continue;
      if ((work += (uri.length + 1) * cost) > ROUTE_WORK) return undefined;
      if (matches(uri)) return server;
    }
    return undefined;
  }
}
