import { describe, expect, it } from "vitest";
import { buildReport, parseTrajectoriesJsonl, type TrajectoryRecord } from "../src/index.js";

const PAYLOAD = `"><script>alert(1)</script><img src=x onerror="alert(2)">'`;

/** Records as a crafted trajectories.jsonl could hold them: text in every field, a string where a number belongs. */
function hostileRecords(): TrajectoryRecord[] {
  const turn = {
    stateText: `<b>${PAYLOAD}</b>`,
    think: `I choose ${PAYLOAD}`,
    answer: `Left" onclick="alert(3)`,
    actions: [`Left"<svg onload=alert(4)>`, `'Up'`],
    reward: 0.5,
    valid: false,
  };
  return [1, 2].flatMap((step) =>
    (["train", "val"] as const).flatMap((split) =>
      [0, 1].map((group) => ({
        step,
        split,
        envTag: `Bandit${PAYLOAD}`,
        // What escaping must survive even where the parser is bypassed (buildReport takes records as given).
        seed: PAYLOAD as unknown as number,
        group,
        turns: [turn, turn],
        totalReward: group,
        success: group === 1,
      })),
    ),
  );
}

/** Every start tag's name and attribute names, read with a simple scanner (enough to spot injected markup). */
function tags(html: string): { name: string; attributes: string[] }[] {
  const body = html
    .replace(/<script>[\s\S]*?<\/script>/, "<script></script>")
    .replace(/<style>[\s\S]*?<\/style>/, "");
  return [...body.matchAll(/<([a-zA-Z][\w-]*)((?:\s+[\w:-]+(?:="[^"]*")?)*)\s*\/?>/g)].map((m) => ({
    name: m[1]!.toLowerCase(),
    attributes: [...m[2]!.matchAll(/\s([\w:-]+)(?:="[^"]*")?/g)].map((a) => a[1]!.toLowerCase()),
  }));
}

describe("the HTML report with hostile trajectory records", () => {
  const html = buildReport([], hostileRecords(), { title: `Run ${PAYLOAD}` });

  it("keeps the one script of its own and adds no element or event attribute", () => {
    expect(html.match(/<script/gi)).toHaveLength(1);
    expect(html).not.toMatch(/<img src=x/i);
    expect(html).not.toMatch(/<svg onload/i);
    const found = tags(html);
    expect(found.filter((t) => t.name === "script")).toHaveLength(1);
    expect(found.flatMap((t) => t.attributes).filter((a) => a.startsWith("on"))).toEqual([]);
    // Every attribute value is closed by its own quote: no raw quote or angle bracket inside one.
    for (const m of html.matchAll(/data-(seed|env|step|split)="([^"]*)"/g)) expect(m[2]).not.toMatch(/[<>]/);
  });

  it("shows the hostile text escaped", () => {
    expect(html).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain(`data-seed="&quot;&gt;&lt;script&gt;`);
  });
});

describe("parseTrajectoriesJsonl", () => {
  const good = {
    step: 1,
    split: "val",
    envTag: "Bandit",
    seed: 123,
    group: 0,
    turns: [{ stateText: "s", think: "t", answer: "a", actions: ["Dragon"], reward: 1, valid: true }],
    totalReward: 1,
    success: true,
  };

  it("keeps well-formed records and leaves out those with a field of the wrong type", () => {
    const lines = [
      good,
      { ...good, seed: `"><script>alert(1)</script>` },
      { ...good, step: "1" },
      { ...good, group: 1.5 },
      { ...good, split: "<b>" },
      { ...good, totalReward: "1" },
      { ...good, turns: [{ ...good.turns[0], actions: [1] }] },
      { ...good, turns: [{ ...good.turns[0], think: { toString: 1 } }] },
      { ...good, turns: [{ ...good.turns[0], stateSvg: 5 }] },
      null,
      [],
    ].map((r) => JSON.stringify(r));
    expect(parseTrajectoriesJsonl(`${lines.join("\n")}\n{"step": 1, "tor`)).toEqual([good]);
  });
});
