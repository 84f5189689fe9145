/** A number's bounds, in JSON Schema's words, so a settings schema can state the same ones. */
export interface NumberBounds {
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  exclusiveMaximum?: number;
}

/** Why `value` is outside `bounds` ("must be > 0, got 0"), or undefined when it is inside. */
export function boundsProblem(value: number, bounds: NumberBounds): string | undefined {
  const { minimum, exclusiveMinimum, maximum, exclusiveMaximum } = bounds;
  if (typeof value !== "number" || Number.isNaN(value)) return `must be a number, got ${value}`;
  if (minimum !== undefined && !(value >= minimum)) return `must be >= ${minimum}, got ${value}`;
  if (exclusiveMinimum !== undefined && !(value > exclusiveMinimum))
    return `must be > ${exclusiveMinimum}, got ${value}`;
  if (maximum !== undefined && !(value <= maximum)) return `must be <= ${maximum}, got ${value}`;
  if (exclusiveMaximum !== undefined && !(value < exclusiveMaximum))
    return `must be < ${exclusiveMaximum}, got ${value}`;
  if (!Number.isFinite(value)) return `must be finite, got ${value}`;
  return undefined;
}
