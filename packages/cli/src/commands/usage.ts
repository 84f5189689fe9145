/** A wrong command line or config: the command exits with code 2 and this message. */
export class UsageError extends Error {
  override name = "UsageError";
}
