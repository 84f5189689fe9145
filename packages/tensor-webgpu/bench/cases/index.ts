/** Every kernel benchmark case, imported statically so that bundlers (the portable benchmark) see them. */
import type { BenchCase } from "../case.js";
import { cases as attention } from "./attention.js";
import { cases as basic } from "./basic.js";
import { cases as block } from "./block.js";
import { cases as matmul } from "./matmul.js";
import { cases as rowops } from "./rowops.js";

export const allCases: BenchCase[] = [...attention, ...basic, ...block, ...matmul, ...rowops];
