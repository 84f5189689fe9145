import { generateReadingDrills, loadPolicy, sftFormat, tokenizeConversations } from "@ragen/cli";
import { asyncScope, noGrad, webGpuBackend, softmax } from "@ragen/tensor-webgpu";
const { model, tokenizer } = await loadPolicy(process.argv[2]!, await webGpuBackend());
const drills = generateReadingDrills({ envTag: "SimpleSokoban", seeds: [300000, 300001, 300002], oracleProbability: 0, start: "random" });
const moves = ["Up", "Down", "Left", "Right"].map((m) => tokenizer.encode(m)[0]!);
for (const d of drills) {
  for (const mv of ["up", "down", "left", "right"]) {
    const r = d.turns[0]!.response!.replace(/I try \w+\.<\/think><answer>\w+/, `I try ${mv}.</think><answer>X`);
    const chat = { ...d, turns: [{ ...d.turns[0]!, response: r }] };
    const [seq] = tokenizeConversations(tokenizer, [chat], sftFormat(1));
    const ids = Array.from(seq!.tokens);
    const ansOpen = tokenizer.encode("<answer>")[0]!;
    const at = ids.lastIndexOf(ansOpen);
    const probs = await asyncScope(async () => {
      const logits = noGrad(() => model.logits({ ids: Int32Array.from(ids.slice(0, at + 1)), batch: 1, seqLen: at + 1 }));
      return await softmax(logits).data();
    });
    const V = model.config.vocabSize;
    console.log(mv, moves.map((m) => probs[at * V + m]!.toFixed(2)).join(" "));
  }
  console.log("--");
}
