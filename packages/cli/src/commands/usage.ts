import { ConfigError } from "@ragen/envs";

/**
 * A wrong command line (an unknown action, a missing argument): a ConfigError, so the command exits with
 * code 2 as for any bad setting, whose message is the sentence itself.
 */
export class UsageError extends ConfigError {
  constructor(message: string) {
    super("command line", [{ field: "", message, source: "command line" }]);
    this.message = message;
    this.name = "UsageError";
  }
}

/**
 * The folder the user typed the command in: npm and pnpm run scripts inside a package and say where
 * the command was typed in INIT_CWD; relative paths on the command line mean that folder.
 */
export function commandCwd(): string {
  return process.env.INIT_CWD ?? process.cwd();
}
