import { describe, expect, it } from "vitest";
import { cachedBuilder } from "../src/kernels/wgsl/code-cache.js";

describe("cachedBuilder", () => {
  it("builds once per distinct arguments and returns the same string object after", () => {
    let builds = 0;
    const code = cachedBuilder((width: 1 | 4, names: string[], flag: boolean) => {
      builds++;
      return `// ${width} ${names.join(" ")} ${flag} ${"x".repeat(1000)}`;
    });
    const first = code(4, ["a", "b"], true);
    expect(code(4, ["a", "b"], true)).toBe(first);
    expect(builds).toBe(1);
    // Arguments that would join to the same text stay apart.
    expect(code(4, ["a,b"], true)).not.toBe(first);
    expect(code(1, ["a", "b"], true)).toContain("// 1 a b true");
    expect(code(4, ["a", "b"], false)).toContain("false");
    expect(builds).toBe(4);
  });
});
