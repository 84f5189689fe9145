const MAX_PROBLEM_LENGTH = 500;

/** C0/C1 controls and bidirectional overrides: what a terminal would act on if a message printed them raw. */
export function isUnsafeForTerminal(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x2028 ||
    code === 0x2029 ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/** `text` with every control or bidirectional-override character written as a \uXXXX escape. */
export function escapeControlCharacters(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    out += isUnsafeForTerminal(code) ? `\\u${code.toString(16).padStart(4, "0")}` : text[i];
  }
  return out;
}

/** Bad input quoted for an error message: JSON-escaped and cut to about `max` characters. */
export function quoteInput(value: string, max = 60): string {
  const cut = value.length > max ? value.slice(0, max) : value;
  return `${escapeControlCharacters(JSON.stringify(cut))}${value.length > max ? "..." : ""}`;
}

/** A tokenizer file that cannot be used: names the file and what is wrong with it. */
export class TokenizerFileError extends Error {
  override readonly name = "TokenizerFileError";
  /** "tokenizer.json", "tokenizer_config.json" or a path to one of them. */
  readonly file: string;
  /** What is wrong, without the file name; escaped and truncated, as it may quote the file's content. */
  readonly problem: string;

  constructor(file: string, problem: string) {
    const safe = escapeControlCharacters(problem);
    const shown = safe.length > MAX_PROBLEM_LENGTH ? `${safe.slice(0, MAX_PROBLEM_LENGTH)}...` : safe;
    const safeFile = escapeControlCharacters(file);
    super(`${safeFile}: ${shown}`);
    this.file = file;
    this.problem = shown;
  }
}

/** A call the tokenizer cannot honour (unknown id, no chat template, bad template input...). */
export class TokenizerError extends Error {
  override readonly name = "TokenizerError";
}
