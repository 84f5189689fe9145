/**
 * Generated WGSL, built once per specialisation: generating a large unrolled kernel costs more than a
 * dispatch, and the context's pipeline cache is keyed by the whole source, so it is not rebuilt per call.
 */

/** A new cache: `cached(key, generate)` is the WGSL for `key`, from `generate` the first time only. */
export function wgslCache(): (key: string, generate: () => string) => string {
  const sources = new Map<string, string>();
  return (key, generate) => {
    let code = sources.get(key);
    if (code === undefined) {
      code = generate();
      sources.set(key, code);
    }
    return code;
  };
}

/**
 * `build` with its results kept per distinct arguments (compared as JSON): kernels that generate their
 * WGSL on every call would otherwise spend tens of µs a dispatch building the text and hashing the new
 * copy in the pipeline cache (measured: 32 µs for the 1.6 KB rope kernel, 1 µs when cached).
 */
export function cachedBuilder<A extends unknown[]>(build: (...args: A) => string): (...args: A) => string {
  const cached = wgslCache();
  return (...args: A) => cached(JSON.stringify(args), () => build(...args));
}
