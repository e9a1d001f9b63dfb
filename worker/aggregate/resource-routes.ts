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
  /** Every server that listed a URI, the first to list it first. */
  readonly #byUri = new Map<string, string[]>();
  /**
   * `cost`: what a match costs per character of the URI (the template's length, plus one).
   * `claims`: whether a match makes the URI the server's while it is down; a template that starts
   * with an expression (`{+any}`, `{scheme}://…`) matches anything, and claims nothing.
   */
  #templates: Array<{ server: string; matches: (uri: string) => boolean; cost: number; claims: boolean }> = [];

  /** Records the URIs a server listed; of the servers that list a URI, the first candidate (in config order) serves it. */
  addResources(server: string, uris: readonly string[]): void {
    for (const uri of uris) {
      const listers = this.#byUri.get(uri);
      if (listers === undefined) this.#byUri.set(uri, [server]);
      else if (!listers.includes(server)) listers.push(server);
    }
  }

  addTemplates(server: string, templates: readonly string[]): void {
    for (const text of templates) {
      try {
        this.#templates.push({ server, matches: compileUriTemplate(text), cost: text.length + 1, claims: !text.startsWith('{') });
      } catch {
        // A template that does not parse cannot route anything; its exact URIs still can.
      }
    }
  }

  clearResources(server: string): void {
    for (const [uri, listers] of this.#byUri) {
      const left = listers.filter((s) => s !== server);
      if (left.length === 0) this.#byUri.delete(uri);
      else if (left.length !== listers.length) this.#byUri.set(uri, left);
    }
  }

  clearTemplates(server: string): void {
    this.#templates = this.#templates.filter((t) => t.server !== server);
  }

  /**
   * The server for `uri` among `candidates` (servers offering resources), or undefined. A URI
   * only servers that are not candidates (down, still opening) named, in their lists or by a
   * template, is theirs: never given to another (`owner` says whose it is). Without `soleServer`, a URI
   * no list names is not given to the one candidate either: a server not among the candidates yet
   * (still opening) may be the one serving it.
   */
  route(uri: string, candidates: readonly string[], soleServer = true): string | undefined {
    const listers = this.#byUri.get(uri);
    // In the candidates' order (config order), not the lists': relisting reorders those.
    if (listers !== undefined) return candidates.find((s) => listers.includes(s));
    const matched = this.#matching(uri, candidates);
    if (matched !== undefined) return matched;
    return soleServer && candidates.length === 1 && this.#matching(uri) === undefined ? candidates[0] : undefined;
  }

  /** The server whose list (the first to list it), else whose claiming template, named `uri`, whether it is up or not. */
  owner(uri: string): string | undefined {
    return this.#byUri.get(uri)?.[0] ?? this.#matching(uri);
  }

  /**
   * The first server with a template matching `uri`, within `ROUTE_WORK`: among `candidates`, any
   * template; without, only templates that claim what they match.
   */
  #matching(uri: string, candidates?: readonly string[]): string | undefined {
    let work = 0;
    for (const { server, matches, cost, claims } of this.#templates) {
      if (candidates === undefined ? !claims : !candidates.includes(server)) continue;
      if ((work += (uri.length + 1) * cost) > ROUTE_WORK) return undefined;
      if (matches(uri)) return server;
    }
    return undefined;
  }
}
