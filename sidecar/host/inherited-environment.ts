/**
 * What an uncontained server inherits from the sidecar: the MCP SDK's allow-list (PATH, HOME,
 * USER, …), as MCP clients do, never the whole environment; values that look like shell
 * functions are dropped, as the SDK does. A contained server gets its profile's environment.
 *
 * The list is the SDK's `DEFAULT_INHERITED_ENV_VARS` written out (its test pins the two equal):
 * importing it would load the SDK's stdio client and cross-spawn into every sidecar, about 1 MiB
 * of RSS for one constant (issue 17).
 *
 * @module
 */

/** The SDK's `DEFAULT_INHERITED_ENV_VARS`: the same names for the same platform. */
export const INHERITED_ENV_NAMES: readonly string[] =
  process.platform === 'win32'
    ? ['APPDATA', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PROCESSOR_ARCHITECTURE', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP', 'USERNAME', 'USERPROFILE', 'PROGRAMFILES']
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

export function inheritedEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of INHERITED_ENV_NAMES) {
    const value = env[name];
    if (value !== undefined && !value.startsWith('()')) out[name] = value;
  }
  return out;
}
