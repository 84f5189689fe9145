/** A wrong command line or config: the command exits with code 2 and this message. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * The folder the user typed the command in: npm and pnpm run scripts inside a package and say where
 * the command was typed in INIT_CWD; relative paths on the command line mean that folder.
 */
export function commandCwd(): string {
  return process.env.INIT_CWD ?? process.cwd();
}
