/**
 * Subgroup matrices (tensor cores from WGSL) rewritten into plain subgroup code, so that the kernels
 * written for them run on adapters without matrix units — every software adapter — and their tiling,
 * edges, transposes and epilogues are checked against the CPU reference on any machine.
 *
 * A matrix is spread over the subgroup's L lanes as on a card: element e (row-major) lives in lane e % L,
 * slot e / L of a per-lane array. Loads and stores move each lane's own elements. A multiply-add
 * out[i][j] += Σ l[i][k]·r[k][j] needs no exchange for `r`: with the result's columns a multiple of L,
 * r[k][j] sits in the same lane as out[i][j], and all lanes of one slot share the row i, so l[i][k] is
 * one value per slot and k, taken from its lane by a shuffle. It is slow, meant for small test problems,
 * and says nothing about speed on a card.
 *
 * Supported: `subgroupMatrixLoad<T>(&v, offset, colMajor, stride)` and `subgroupMatrixStore(&v, offset,
 * value, colMajor, stride)` on module-scope arrays named directly, loads through a view of a module-scope
 * buffer bound by name (`let v = bufferView<array<T, N>>(&buffer, offset);`), `subgroupMatrixMultiplyAccumulate`,
 * zero-valued constructors `T()`, in a kernel whose entry point is `main`, with one left, one right and one
 * result type (all of this package's kernels). Anything else is refused with an error naming it.
 */

/** The extension a kernel enables to use subgroup matrices. */
export const SUBGROUP_MATRIX_EXTENSION = "chromium_experimental_subgroup_matrix";

export class SubgroupMatrixEmulationError extends Error {
  constructor(problem: string) {
    super(`subgroup-matrix emulation: ${problem}`);
    this.name = "SubgroupMatrixEmulationError";
  }
}

type Kind = "left" | "right" | "result";

/** One matrix type: its kind, component type, columns and rows (WGSL's `subgroup_matrix_<kind><T, C, R>`). */
interface MatrixType {
  kind: Kind;
  component: string;
  columns: number;
  rows: number;
  /** The struct that stands for it. */
  name: string;
}

const TYPE = /subgroup_matrix_(left|right|result)<\s*(\w+)\s*,\s*(\d+)u?\s*,\s*(\d+)u?\s*>/g;

function parseType(match: RegExpExecArray | RegExpMatchArray): MatrixType {
  const [, kind, component, columns, rows] = match as unknown as [string, Kind, string, string, string];
  const name = `Sgm${kind[0]!.toUpperCase()}${kind.slice(1)}_${component}_${columns}x${rows}`;
  return { kind, component, columns: Number(columns), rows: Number(rows), name };
}

/**
 * The element type of module-scope array `name` (`var<...> name: array<T, ...>` or `array<T>`, after any
 * attributes, at the start of a line: this package's kernels declare them so, and an indented `var` is a
 * function's).
 */
function elementTypeOf(wgsl: string, name: string): string {
  const declaration = new RegExp(
    `^(?:@\\w+\\([^)]*\\)\\s*)*var(?:<[^>]*>)?\\s+${name}\\s*:\\s*array<\\s*(\\w+)`,
    "m",
  ).exec(wgsl);
  if (!declaration)
    throw new SubgroupMatrixEmulationError(`"${name}" is not a module-scope array this rewrite can read`);
  return declaration[1]!;
}

/** The lane's elements: slot s holds element e = s·L + lane, at (r, c) of a matrix `columns` wide. */
const eachElement = (type: MatrixType, lanes: number, body: string) => `for (var s = sgmZero; s < ${
  (type.rows * type.columns) / lanes
}u; s++) {
    let e = s * ${lanes}u + sgmLane;
    let r = e / ${type.columns}u;
    let c = e % ${type.columns}u;
    let index = select(offset + r * stride + c, offset + c * stride + r, colMajor);
    ${body}
  }`;

/**
 * A load's helper; `view`, for a load through a buffer view, is the view's `let` binding, repeated in the
 * helper (a function cannot take a workgroup pointer from its caller without unrestricted pointer parameters).
 */
function loadFunction(type: MatrixType, array: string, lanes: number, view = ""): string {
  return /* wgsl */ `fn sgmLoad_${type.name}_${array}(offset: u32, colMajor: bool, stride: u32) -> ${type.name} {
  ${view}
  var m: ${type.name};
  ${eachElement(type, lanes, `m.v[s] = ${type.component}(${array}[index]);`)}
  return m;
}`;
}

function storeFunction(type: MatrixType, array: string, element: string, lanes: number): string {
  return /* wgsl */ `fn sgmStore_${array}(offset: u32, m: ${type.name}, colMajor: bool, stride: u32) {
  ${eachElement(type, lanes, `${array}[index] = ${element}(m.v[s]);`)}
}`;
}

function multiplyAccumulateFunction(
  left: MatrixType,
  right: MatrixType,
  result: MatrixType,
  lanes: number,
): string {
  if (left.rows !== result.rows || right.columns !== result.columns || left.columns !== right.rows)
    throw new SubgroupMatrixEmulationError(
      `cannot multiply ${left.rows}x${left.columns} by ${right.rows}x${right.columns} into ${result.rows}x${result.columns}`,
    );
  if (result.columns % lanes !== 0)
    throw new SubgroupMatrixEmulationError(
      `a result ${result.columns} columns wide is not emulated on subgroups of ${lanes} lanes`,
    );
  const acc = result.component;
  const depth = left.columns;
  const columns = result.columns;
  // Slot s of every lane holds row i = s·L / columns, columns j0 + lane (j0 = s·L % columns).
  return /* wgsl */ `fn sgmMultiplyAccumulate(l: ${left.name}, r: ${right.name}, acc: ${result.name}) -> ${result.name} {
  var out = acc;
  for (var s = sgmZero; s < ${(result.rows * columns) / lanes}u; s++) {
    let i = (s * ${lanes}u) / ${columns}u;
    let j0 = (s * ${lanes}u) % ${columns}u;
    var sum = out.v[s];
    for (var k = sgmZero; k < ${depth}u; k++) {
      let li = i * ${depth}u + k;
      let lik = subgroupShuffle(l.v[li / ${lanes}u], li % ${lanes}u);
      sum += ${acc}(lik) * ${acc}(r.v[(k * ${columns}u + j0) / ${lanes}u]);
    }
    out.v[s] = sum;
  }
  return out;
}`;
}

/** The one type of `kind` the kernel uses; a kernel with none or several is refused where it matters. */
function onlyType(types: Map<string, MatrixType>, kind: Kind, use: string): MatrixType {
  const ofKind = [...types.values()].filter((t) => t.kind === kind);
  if (ofKind.length !== 1)
    throw new SubgroupMatrixEmulationError(
      `${use} needs exactly one ${kind} matrix type in the kernel, found ${ofKind.length}`,
    );
  return ofKind[0]!;
}

/** The statement that binds `name` to a view of a module-scope buffer (`let name = bufferView<...>(&b, o);`). */
function viewBinding(wgsl: string, name: string): string {
  const binding = new RegExp(
    `let\\s+${name}\\s*=\\s*bufferView<[^;]*>\\s*\\(\\s*&\\s*\\w+\\s*,[^;]*\\);`,
  ).exec(wgsl);
  if (!binding)
    throw new SubgroupMatrixEmulationError(
      `a load from "${name}", which is neither &array nor a buffer view`,
    );
  return binding[0];
}

/** A pointer argument `&name` or `&(name)` as the array's name, refusing anything but a plain name. */
function arrayName(target: string, use: string): string {
  const name = target.replace(/[()\s]/g, "");
  if (!/^\w+$/.test(name))
    throw new SubgroupMatrixEmulationError(`${use} "${name}" (only module-scope arrays are emulated)`);
  return name;
}

/** `main` with the module-scope `sgmLane` set from its subgroup_invocation_id (a parameter added if absent). */
function setLaneInMain(code: string): string {
  const start = code.indexOf("fn main(");
  if (start < 0) throw new SubgroupMatrixEmulationError("the kernel has no entry point named main");
  // The parameter list ends at the parenthesis that balances main's (attributes have their own).
  const open = start + "fn main".length;
  let depth = 0;
  let close = open;
  for (; close < code.length; close++) {
    if (code[close] === "(") depth++;
    else if (code[close] === ")" && --depth === 0) break;
  }
  const body = code.indexOf("{", close);
  const params = code.slice(open + 1, close);
  const existing = /@builtin\(subgroup_invocation_id\)\s*(\w+)\s*:/.exec(params);
  const lane = existing?.[1] ?? "sgmLaneId";
  const withLane = existing ? params : `@builtin(subgroup_invocation_id) sgmLaneId: u32, ${params}`;
  const prologue = `\n  sgmLane = ${lane};\n  sgmSharedZero = 0u;\n  sgmZero = workgroupUniformLoad(&sgmSharedZero);`;
  return `${code.slice(0, open)}(${withLane})${code.slice(close + 1, body + 1)}${prologue}${code.slice(body + 1)}`;
}

/**
 * `wgsl` with its subgroup matrices rewritten for subgroups of `lanes` invocations (the adapter's fixed
 * subgroup size); code without them is returned unchanged.
 */
export function emulateSubgroupMatrices(wgsl: string, lanes: number): string {
  if (!wgsl.includes(SUBGROUP_MATRIX_EXTENSION)) return wgsl;
  for (const unsupported of ["subgroupMatrixMultiply<", "subgroupMatrixMultiply(", "subgroupMatrixScalar"])
    if (wgsl.includes(unsupported))
      throw new SubgroupMatrixEmulationError(`${unsupported.replace(/[<(]$/, "")} is not emulated`);
  const types = new Map<string, MatrixType>();
  for (const match of wgsl.matchAll(TYPE)) {
    const type = parseType(match);
    if ((type.rows * type.columns) % lanes !== 0)
      throw new SubgroupMatrixEmulationError(
        `a ${type.rows}x${type.columns} matrix does not spread evenly over ${lanes} lanes`,
      );
    types.set(type.name, type);
  }
  const helpers = new Map<string, string>();
  let code = wgsl
    .replace(/enable ([^;]*);\n?/g, (_, list: string) => {
      const kept = list
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x && x !== SUBGROUP_MATRIX_EXTENSION);
      return kept.length ? `enable ${kept.join(", ")};\n` : "";
    })
    .replace(/diagnostic\(off, chromium_experimental\.subgroup_matrix_uniformity\);\n?/, "");
  if (!/enable [^;]*\bsubgroups\b/.test(code)) code = `enable subgroups;\n${code}`;
  // The shuffles run where the kernel's matrix operations ran, which a card requires to be uniform; the
  // helpers' loops start at a private zero (below), which the analysis cannot see is uniform.
  code = `diagnostic(off, subgroup_uniformity);\n${code}`;

  code = code.replace(
    /subgroupMatrixLoad<\s*(subgroup_matrix_\w+<[^>]*>)\s*>\s*\(\s*(&?)\s*(\(?\s*[\w.]+\s*\)?)\s*,/g,
    (_, typeText: string, address: string, target: string) => {
      const array = arrayName(target, "a load from");
      // A module-scope array (&name), or a view of a module-scope buffer bound to `name`.
      const view = address ? "" : viewBinding(wgsl, array);
      if (address) elementTypeOf(wgsl, array); // refuses anything but a module-scope array
      const type = parseType(new RegExp(TYPE.source).exec(typeText)!);
      helpers.set(`load ${type.name} ${array}`, loadFunction(type, array, lanes, view));
      return `sgmLoad_${type.name}_${array}(`;
    },
  );
  if (code.includes("subgroupMatrixLoad"))
    throw new SubgroupMatrixEmulationError("a subgroupMatrixLoad without an explicit matrix type");

  code = code.replace(/subgroupMatrixStore\s*\(\s*&\s*(\(?\s*[\w.]+\s*\)?)\s*,/g, (_, target: string) => {
    const array = arrayName(target, "a store to");
    const type = onlyType(types, "result", "subgroupMatrixStore");
    helpers.set(`store ${array}`, storeFunction(type, array, elementTypeOf(wgsl, array), lanes));
    return `sgmStore_${array}(`;
  });

  if (code.includes("subgroupMatrixMultiplyAccumulate(")) {
    const [left, right, result] = (["left", "right", "result"] as const).map((kind) =>
      onlyType(types, kind, "subgroupMatrixMultiplyAccumulate"),
    ) as [MatrixType, MatrixType, MatrixType];
    helpers.set("multiply-accumulate", multiplyAccumulateFunction(left, right, result, lanes));
    code = code.replaceAll("subgroupMatrixMultiplyAccumulate(", "sgmMultiplyAccumulate(");
  }

  code = setLaneInMain(
    code.replace(TYPE, (...match) => parseType(match as unknown as RegExpMatchArray).name),
  );
  const structs = [...types.values()].map(
    (t) => `struct ${t.name} { v: array<${t.component}, ${(t.rows * t.columns) / lanes}> }`,
  );
  return `${code}

// Subgroup matrices emulated over the subgroup's ${lanes} lanes (subgroup-matrix-emulation.ts).
var<private> sgmLane: u32;
// Zero, from workgroup memory: the helpers' loops start there so that compilers cannot unroll them (unrolled,
// a kernel with 16 multiply-adds took minutes for lavapipe's LLVM to compile).
var<private> sgmZero: u32;
var<workgroup> sgmSharedZero: u32;
${[...structs, ...helpers.values()].join("\n\n")}
`;
}
