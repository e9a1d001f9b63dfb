/**
 * Build-time stand-in for the MCP SDK's ajv provider in `dist/worker.js`: the SDK's own
 * @cfworker/json-schema provider under the name the SDK imports. ajv generates code with
 * `new Function`, which edge runtimes refuse, and it triples the bundle.
 *
 * @module
 */
export { CfWorkerJsonSchemaValidator as AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
