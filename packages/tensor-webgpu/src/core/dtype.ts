/**
 * Element types. f16 is stored as IEEE binary16, two per 32-bit word (WGSL `array<f16>`); kernels that
 * read or write it natively need the device feature "shader-f16".
 */
export type DType = "f32" | "i32" | "f16";

/** Float element types (what float tensors, and the kernels that compute in them, hold). */
export type FloatDType = "f32" | "f16";

/** Bytes per element of `dtype` in GPU storage. */
export const dtypeBytes = (dtype: DType): number => (dtype === "f16" ? 2 : 4);
