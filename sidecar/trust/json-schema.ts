/**
 * The JSON Schema engine behind tool-call authorization (ajv).
 *
 * Profile authors write schemas over `{toolName, input}`. Most are plain draft-07 schemas; a schema
 * that declares `"$schema": "https://json-schema.org/draft/2020-12/schema"` is compiled with ajv's
 * 2020-12 dialect instead, because that is the dialect MCP tool input schemas use. `strict: false`
 * keeps unknown keywords (annotations such as `x-order`) from failing a profile. But a rule must
 * never be weaker, or wider, than it reads: ajv ignores an unknown keyword, and so a `format` it
 * does not check or a 2020-12 keyword in a draft-07 schema would let an allow rule pass anything
 * and a restricted one match everything. So every format ajv-formats knows is checked, and
 * `schemaProblem` refuses a format it does not and a 2020-12 keyword where the schema does not
 * declare that dialect.
 *
 * ajv v8 registers every compiled schema that has an `$id`, and refuses a second schema with the
 * same `$id`. So profile checking only validates against the meta-schema (nothing registered), and
 * each authorizer compiles with engines of its own ({@link SchemaCompiler}).
 *
 * ajv is loaded on first use, synchronously (the profile's zod parse calls {@link schemaProblem}),
 * not when the sidecar starts: its module bodies cost the linked sidecar about 0.5 MiB of RSS, and
 * most profiles hold no schema (issue 17: the idle sidecar). In dist/sidecar.js `require` is
 * esbuild's, which bundles ajv and runs its module bodies at the first call (`sidecar-bundle.test.ts`
 * checks a profile's schemas there); from source (tsx, vitest) it is Node's, by `createRequire`.
 *
 * @module
 */
import { createRequire } from 'node:module';
import type { Ajv, AnySchema, ValidateFunction } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { FormatsPlugin } from 'ajv-formats';

interface AjvModules {
  Ajv: typeof Ajv;
  Ajv2020: typeof Ajv2020;
  addFormats: FormatsPlugin;
}

let loaded: AjvModules | undefined;

function ajv(): AjvModules {
  if (loaded !== undefined) return loaded;
  // Literal `require('…')` calls, so that esbuild sees and bundles both modules.
  const load = typeof require === 'function' ? undefined : createRequire(import.meta.url);
  const draft07 = (load ? load('ajv') : require('ajv')) as { Ajv: typeof Ajv };
  const draft2020 = (load ? load('ajv/dist/2020.js') : require('ajv/dist/2020.js')) as { Ajv2020: typeof Ajv2020 };
  const formats = (load ? load('ajv-formats') : require('ajv-formats')) as { default: FormatsPlugin };
  loaded = { Ajv: draft07.Ajv, Ajv2020: draft2020.Ajv2020, addFormats: formats.default };
  return loaded;
}

/** A JSON Schema as written in a profile file: an object or a boolean. */
export type JsonSchema = boolean | Readonly<Record<string, unknown>>;

/** One ajv engine per dialect, created on first use. */
class Engines {
  #draft07: Ajv | undefined;
  #draft2020: Ajv2020 | undefined;

  for(schema: JsonSchema): Ajv | Ajv2020 {
    const dialect = typeof schema === 'object' ? schema['$schema'] : undefined;
    if (isDraft2020(schema)) {
      this.#draft2020 ??= withFormats(new (ajv().Ajv2020)({ strict: false, allErrors: false }));
      return this.#draft2020;
    }
    this.#draft07 ??= withFormats(new (ajv().Ajv)({ strict: false, allErrors: false }));
    return this.#draft07;
  }
}

function withFormats<T extends Ajv | Ajv2020>(engine: T): T {
  ajv().addFormats(engine);
  return engine;
}

function isDraft2020(schema: JsonSchema): boolean {
  const dialect = typeof schema === 'object' ? schema['$schema'] : undefined;
  return typeof dialect === 'string' && dialect.includes('2020-12');
}

/** Validation keywords of JSON Schema 2019-09 and 2020-12 that a draft-07 engine does not know, and would ignore. */
const LATER_KEYWORDS = ['dependentRequired', 'dependentSchemas', 'maxContains', 'minContains', 'prefixItems', 'unevaluatedItems', 'unevaluatedProperties'];
/** Keywords whose value is a subschema, a list of subschemas, or a map of them: where a walk goes on. */
const SUBSCHEMA = ['additionalItems', 'additionalProperties', 'contains', 'else', 'if', 'not', 'propertyNames', 'then', 'unevaluatedItems', 'unevaluatedProperties', 'items'];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];
const SUBSCHEMA_MAPS = ['$defs', 'definitions', 'dependencies', 'dependentSchemas', 'patternProperties', 'properties'];

/** The first keyword of `schema` (already valid against its meta-schema) that its engine would not enforce, as a problem; undefined when there is none. */
function unenforced(schema: JsonSchema, later: boolean, formats: readonly string[], at = 'schema'): string | undefined {
  if (typeof schema !== 'object') return undefined;
  const format = schema['format'];
  if (typeof format === 'string' && !formats.includes(format)) return `${at}/format "${format.slice(0, 64)}" is not a format this host checks, so the rule would not hold: use one of ${formats.join(', ')}, or a pattern`;
  if (!later) {
    const keyword = LATER_KEYWORDS.find((k) => k in schema);
    if (keyword !== undefined) return `${at}/${keyword} is a keyword of JSON Schema 2020-12, which this schema does not declare, so the rule would not hold: add "$schema": "https://json-schema.org/draft/2020-12/schema"`;
  }
  const children: [string, unknown][] = [];
  for (const k of SUBSCHEMA) if (isSchema(schema[k])) children.push([`${at}/${k}`, schema[k]]);
  for (const k of SUBSCHEMA_LISTS) if (Array.isArray(schema[k])) (schema[k] as unknown[]).forEach((child, i) => children.push([`${at}/${k}/${i}`, child]));
  for (const k of SUBSCHEMA_MAPS) {
    const map = schema[k];
    if (isSchema(map) && typeof map === 'object') for (const [name, child] of Object.entries(map)) children.push([`${at}/${k}/${name}`, child]);
  }
  for (const [path, child] of children) {
    if (!isSchema(child)) continue;
    const problem = unenforced(child, later, formats, path);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'boolean' || (typeof value === 'object' && value !== null && !Array.isArray(value));
}

const shared = new Engines();

/**
 * Checks a schema against its dialect's meta-schema (without registering it anywhere).
 *
 * @param schema A JSON Schema (object or boolean).
 * @returns `undefined` when the schema is usable, otherwise the reason in sentence case.
 * @example Rejecting a schema with a wrong keyword type
 * ```ts
 * schemaProblem({ type: 12 }); // 'schema/type must be equal to one of the allowed values, …'
 * schemaProblem({ type: 'object' }); // undefined
 * ```
 */
export function schemaProblem(schema: JsonSchema): string | undefined {
  const engine = shared.for(schema);
  try {
    if (engine.validateSchema(schema as AnySchema) !== true) return engine.errorsText(engine.errors, { dataVar: 'schema' });
    return unenforced(schema, isDraft2020(schema), Object.keys(engine.formats));
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Compiles the schemas of one authorizer; `$id`s only need to be unique within it. */
export class SchemaCompiler {
  readonly #engines = new Engines();

  /**
   * @param schema A schema already checked with {@link schemaProblem}.
   * @returns A predicate saying whether a value satisfies the schema.
   * @throws Error when the schema cannot be compiled (an unresolvable `$ref`, for example).
   */
  compile(schema: JsonSchema): (value: unknown) => boolean {
    const validate: ValidateFunction = this.#engines.for(schema).compile(schema as AnySchema);
    return (value) => validate(value) === true;
  }
}
