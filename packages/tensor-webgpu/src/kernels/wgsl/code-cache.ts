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
