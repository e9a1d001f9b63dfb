/**
 * The JSON Schema engine behind tool-call authorization (ajv).
 *
 * Profile authors write schemas over `{toolName, input}`. Most are plain draft-07 schemas; a schema
 * that declares `"$schema": "https://json-schema.org/draft/2020-12/schema"` is compiled with ajv's
 * 2020-12 dialect instead, because that is the dialect MCP tool input schemas use. `strict: false`
 * keeps unknown keywords (annotations such as `title` in odd places) from failing a profile.
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

interface AjvModules {
  Ajv: typeof Ajv;
  Ajv2020: typeof Ajv2020;
}

let loaded: AjvModules | undefined;

function ajv(): AjvModules {
  if (loaded !== undefined) return loaded;
  // Literal `require('…')` calls, so that esbuild sees and bundles both modules.
  const load = typeof require === 'function' ? undefined : createRequire(import.meta.url);
  const draft07 = (load ? load('ajv') : require('ajv')) as { Ajv: typeof Ajv };
  const draft2020 = (load ? load('ajv/dist/2020.js') : require('ajv/dist/2020.js')) as { Ajv2020: typeof Ajv2020 };
  loaded = { Ajv: draft07.Ajv, Ajv2020: draft2020.Ajv2020 };
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
    if (typeof dialect === 'string' && dialect.includes('2020-12')) {
      this.#draft2020 ??= new (ajv().Ajv2020)({ strict: false, allErrors: false });
      return this.#draft2020;
    }
    this.#draft07 ??= new (ajv().Ajv)({ strict: false, allErrors: false });
    return this.#draft07;
  }
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
    if (engine.validateSchema(schema as AnySchema) === true) return undefined;
    return engine.errorsText(engine.errors, { dataVar: 'schema' });
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
