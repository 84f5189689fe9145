/**
 * The names of the element-wise and reduction ops: the vocabulary of the backend interface, implemented by
 * the WGSL kernels (kernels/elementwise.ts, kernels/reduce.ts) and the CPU references alike.
 */

export type BinaryOp =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "max"
  | "min"
  | "pow"
  | "gt"
  | "ge"
  | "lt"
  | "le"
  | "eq";

export type UnaryOp =
  | "neg"
  | "exp"
  | "log"
  | "sqrt"
  | "rsqrt"
  | "abs"
  | "tanh"
  | "sigmoid"
  | "silu"
  | "relu"
  | "square"
  | "reciprocal"
  | "sin"
  | "cos"
  | "sign";

export type ReduceOp = "sum" | "mean" | "max" | "min";
