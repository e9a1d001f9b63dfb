import { describe, expect, it } from 'vitest';
import { ResourceRoutes, ROUTE_WORK } from './resource-routes.ts';

describe('ResourceRoutes', () => {
  it('routes by exact URI, then by template, then to the sole server offering resources', () => {
    const routes = new ResourceRoutes();
    routes.addResources('alpha', ['file:///a.txt']);
    routes.addTemplates('beta', ['users://{id}/profile']);
    expect(routes.route('file:///a.txt', ['alpha', 'beta'])).toBe('alpha');
    expect(routes.route('users://42/profile', ['alpha', 'beta'])).toBe('beta');
    expect(routes.route('other://x', ['alpha', 'beta'])).toBeUndefined();
    expect(routes.route('other://x', ['beta'])).toBe('beta');
  });

  it('gives no other server a URI its owner named, by its list or a template, while the owner is not a candidate (review s20)', () => {
    const routes = new ResourceRoutes();
    routes.addResources('alpha', ['file:///a.txt']);
    routes.addTemplates('alpha', ['users://{id}/profile']);
    routes.addTemplates('beta', ['file:///{+path}']);
    expect(routes.route('file:///a.txt', ['beta'])).toBeUndefined();
    expect(routes.route('users://42/profile', ['beta'])).toBeUndefined();
    expect(routes.owner('file:///a.txt')).toBe('alpha');
    expect(routes.owner('users://42/profile')).toBe('alpha');
    // What the owner never named still goes to the others, by template or as the sole server.
    expect(routes.route('file:///b.txt', ['beta'])).toBe('beta');
    expect(routes.route('other://x', ['beta'])).toBe('beta');
    expect(routes.owner('other://x')).toBeUndefined();
  });

  it('routes a URI two servers list to the first of them, in config order, that is up (review of s21)', () => {
    const routes = new ResourceRoutes();
    routes.addResources('beta', ['file:///shared.txt']);
    routes.addResources('alpha', ['file:///shared.txt']);
    expect(routes.route('file:///shared.txt', ['alpha', 'beta'])).toBe('alpha');
    // Relisting changes nothing: the agent reads the same server's file from one list to the next.
    routes.clearResources('alpha');
    routes.addResources('alpha', ['file:///shared.txt']);
    expect(routes.route('file:///shared.txt', ['alpha', 'beta'])).toBe('alpha');
    expect(routes.route('file:///shared.txt', ['beta'])).toBe('beta');
    expect(routes.route('file:///shared.txt', ['gamma'])).toBeUndefined();
    routes.clearResources('alpha');
    expect(routes.owner('file:///shared.txt')).toBe('beta');
    routes.clearResources('beta');
    expect(routes.owner('file:///shared.txt')).toBeUndefined();
  });

  it('takes a template that starts with an expression (a catch-all) for no claim: a down server\'s does not keep the URI from the one up', () => {
    const routes = new ResourceRoutes();
    routes.addTemplates('alpha', ['{+any}']);
    routes.addResources('beta', ['file:///b.txt']);
    expect(routes.route('file:///unlisted.txt', ['beta'])).toBe('beta');
    expect(routes.owner('file:///unlisted.txt')).toBeUndefined();
    // Up, it serves what it matches, as any template does.
    expect(routes.route('file:///unlisted.txt', ['alpha', 'beta'])).toBe('alpha');
  });

  it('bounds the work of one URI over every template tried: a server listing many costly templates routes nothing past it (review s19)', () => {
    const routes = new ResourceRoutes();
    const hostile = `{+a}${'{+b}'.repeat(60)}!`;
    routes.addTemplates('hostile', Array.from({ length: 1000 }, () => hostile));
    routes.addTemplates('good', ['file:///{+path}']);
    const uri = `file:///${'x/'.repeat(8_000)}`;
    // Every hostile template tried would be 1000 × (uri + 1) × 245 units, far past the bound.
    expect(1000 * (uri.length + 1) * (hostile.length + 1)).toBeGreaterThan(ROUTE_WORK);
    expect(routes.route(uri, ['hostile', 'good'])).toBeUndefined();
    // The same URI routes when the costly templates are not among the candidates.
    expect(routes.route(uri, ['good'], false)).toBe('good');
  });
});
