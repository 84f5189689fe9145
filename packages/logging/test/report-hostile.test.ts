import { launchChromium, skipWithoutChromium, warnIfSkipped } from "@ragen/test-chromium";
import { describe, expect, it } from "vitest";
import { buildReport, parseTrajectoriesJsonl, type TrajectoryRecord } from "../src/index.js";

const PAYLOAD = `"><script>window.__pwned=true</script><img src=x onerror="window.__pwned=true">'`;

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
    expect(html).toContain("&quot;&gt;&lt;script&gt;window.__pwned=true&lt;/script&gt;");
    expect(html).toContain(`data-seed="&quot;&gt;&lt;script&gt;`);
  });
});

warnIfSkipped("report-hostile.test.ts");

describe.skipIf(skipWithoutChromium)("the hostile report in headless Chromium", () => {
  it("runs none of the records' script and keeps their text as text", async () => {
    const browser = await launchChromium({ webgpu: false });
    try {
      const page = await browser.newPage();
      await page.setContent(buildReport([], hostileRecords(), { title: `Run ${PAYLOAD}` }));
      const state = await page.evaluate(() => ({
        pwned: (window as unknown as { __pwned?: boolean }).__pwned === true,
        scripts: document.querySelectorAll("script").length,
        eventAttributes: Array.from(document.querySelectorAll("*")).flatMap((e) =>
          Array.from(e.attributes)
            .map((a) => a.name)
            .filter((name) => name.startsWith("on")),
        ),
        seeds: Array.from(document.querySelectorAll("[data-seed]")).map(
          (e) => (e as HTMLElement).dataset.seed,
        ),
      }));
      expect(state.pwned).toBe(false);
      expect(state.scripts).toBe(1);
      expect(state.eventAttributes).toEqual([]);
      expect(state.seeds.length).toBeGreaterThan(0);
      for (const seed of state.seeds) expect(seed).toBe(PAYLOAD);
    } finally {
      await browser.close();
    }
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
