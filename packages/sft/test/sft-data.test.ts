import { type Env, registerEnv, type StepResult, unregisterEnv } from "@ragen/envs";
import { parseResponse } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { generateReadingDrills, generateSftConversations, sftCorpus, sftFormat } from "../src/sft-data.js";

const seeds = Array.from({ length: 200 }, (_, i) => i);

/** Walk a line of `length` cells to its end; registered with its own guide and thoughts. */
class LineEnv implements Env<{ length: number }> {
  readonly name = "sft-line";
  readonly actions = ["Forward", "Back"];
  readonly instructions = "Walk forward to the end of the line.";
  position = 0;
  done = true;
  constructor(readonly config: { length: number }) {}
  reset(seed: number): string {
    this.position = seed % 2;
    this.done = false;
    return this.render();
  }
  step(action: string): StepResult {
    const name = action.trim().toLowerCase();
    const valid = !this.done && (name === "forward" || name === "back");
    if (valid) this.position = Math.max(0, this.position + (name === "forward" ? 1 : -1));
    if (valid) this.done = this.position >= this.config.length;
    return {
      observation: this.render(),
      reward: this.done ? 1 : 0,
      done: this.done,
      info: { success: this.done, actionIsValid: valid, actionIsEffective: valid },
    };
  }
  render(): string {
    return `at ${this.position} of ${this.config.length}`;
  }
  renderSvg(): string {
    return '<svg xmlns="http://www.w3.org/2000/svg"></svg>';
  }
  availableActions(): string[] {
    return [...this.actions];
  }
}

describe("SFT warm-start data", () => {
  it("writes RAGEN-format chats whose answers parse to the actions played", () => {
    const [chat] = generateSftConversations({ envTag: "FrozenLake", seeds: [3], oracleProbability: 0.5 });
    const roles = chat!.messages.map((m) => m.role);
    expect(roles[0]).toBe("system");
    expect(roles.slice(1).every((r, i) => r === (i % 2 === 0 ? "user" : "assistant"))).toBe(true);
    expect(chat!.messages[1]!.content).toContain("Turn 1:\nState:\n");
    for (const message of chat!.messages.filter((m) => m.role === "assistant")) {
      const parsed = parseResponse(message.content, {
        actions: ["Left", "Down", "Right", "Up"],
        maxActionsPerTurn: 1,
      });
      expect(parsed.formatOk).toBe(true);
      expect(parsed.actions).toHaveLength(1);
      expect(parsed.think.toLowerCase()).toContain(parsed.actions[0]!.toLowerCase());
    }
  });

  it("mixes oracle and random actions in the asked proportion, so the warm start is mediocre", () => {
    const chats = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 0.6 });
    const flags = chats.flatMap((c) => c.fromOracle);
    const share = flags.filter(Boolean).length / flags.length;
    expect(Math.abs(share - 0.6)).toBeLessThan(5 * Math.sqrt((0.6 * 0.4) / flags.length));
    // Success needs more seeds to tell apart: the mix of the shipped recipe against the guide alone.
    const many = Array.from({ length: 1000 }, (_, i) => i);
    const mixed = generateSftConversations({ envTag: "FrozenLake", seeds: many, oracleProbability: 0.3 });
    const success = mixed.filter((c) => c.success).length / mixed.length;
    const oracleOnly = generateSftConversations({ envTag: "FrozenLake", seeds: many, oracleProbability: 1 });
    const oracleSuccess = oracleOnly.filter((c) => c.success).length / oracleOnly.length;
    expect(success).toBeLessThan(oracleSuccess);
  });

  it("covers Bandit with one pull per chat", () => {
    const chats = generateSftConversations({
      envTag: "Bandit",
      seeds: seeds.slice(0, 50),
      oracleProbability: 0.5,
    });
    expect(chats.every((c) => c.fromOracle.length === 1)).toBe(true);
    const last = chats[0]!.messages.at(-1)!;
    expect(last.role).toBe("assistant");
    expect(last.content).toMatch(/<answer>(Phoenix|Dragon)<\/answer>$/);
  });

  it("is deterministic and yields a training corpus", () => {
    const a = generateSftConversations({ envTag: "FrozenLake", seeds: [1, 2], oracleProbability: 0.5 });
    const b = generateSftConversations({ envTag: "FrozenLake", seeds: [1, 2], oracleProbability: 0.5 });
    expect(a).toEqual(b);
    expect(sftCorpus(a).length).toBe(a.reduce((n, c) => n + c.messages.length, 0));
  });

  it("reads the FrozenLake grid out loud: the player's and the goal's cells, counted from 1", () => {
    for (const chat of generateSftConversations({
      envTag: "FrozenLake",
      seeds: seeds.slice(0, 30),
      oracleProbability: 0.5,
    })) {
      for (const turn of chat.turns) {
        const rows = turn.observation.split("\n");
        const cellOf = (symbols: RegExp) => {
          const row = rows.findIndex((line) => symbols.test(line));
          return [row + 1, rows[row]!.search(symbols) + 1];
        };
        const match = /I am at row (\d), column (\d); the goal is at row (\d), column (\d)/.exec(
          turn.response!,
        );
        expect(match, turn.response).not.toBeNull();
        expect(match!.slice(1, 3).map(Number)).toEqual(cellOf(/P/));
        expect(match!.slice(3, 5).map(Number)).toEqual(cellOf(/G/));
      }
    }
  });

  it("copies the coordinates of player and goal where the observation lists them", () => {
    for (const chat of generateSftConversations({
      envTag: "FrozenLakeGridCoord",
      seeds: seeds.slice(0, 30),
      oracleProbability: 0.5,
    })) {
      chat.turns.forEach((turn, i) => {
        const listed = (name: string) => new RegExp(`${name}: (\\(\\d, \\d\\))`).exec(turn.observation)![1];
        expect(turn.response).toContain(`I am at ${listed("Player")}; the goal is at ${listed("Goal")}, `);
        // The promotable template exactly on the guide's turns.
        expect(turn.response!.includes("brings me closer to the goal"), turn.response).toBe(
          chat.fromOracle[i],
        );
      });
    }
  });

  it("pays to follow the guide: guided FrozenLake chats succeed more often than random ones", () => {
    const guided = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 1 });
    const random = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 0 });
    const rate = (chats: typeof guided) => chats.filter((c) => c.success).length / chats.length;
    expect(rate(guided)).toBeGreaterThan(rate(random));
  });

  it("writes several FrozenLake moves a turn when asked: one answer, the thought naming them all", () => {
    const options = { envTag: "FrozenLakeGridCoord", seeds: seeds.slice(0, 30), oracleProbability: 0.5 };
    const chats = generateSftConversations({ ...options, actionsPerTurn: 2 });
    expect(chats[0]!.instructions).toContain("You can make up to 2 actions");
    let pairs = 0;
    for (const chat of chats) {
      let left = 10;
      for (const turn of chat.turns) {
        expect(turn.actionsLeft).toBe(left);
        const parsed = parseResponse(`<think>${turn.response!}`, {
          actions: ["Left", "Down", "Right", "Up"],
          maxActionsPerTurn: 2,
        });
        expect(parsed.formatOk).toBe(true);
        if (parsed.actions.length === 2) pairs++;
        const named = parsed.actions.map((a) => a.toLowerCase()).join(", then ");
        expect(parsed.think).toContain(named);
        left -= parsed.actions.length;
      }
    }
    expect(pairs).toBeGreaterThan(chats.length / 2);
    // Bandit keeps one action a turn; one action a turn is the data it always was.
    const bandit = generateSftConversations({
      envTag: "Bandit",
      seeds: [1, 2],
      oracleProbability: 0.5,
      actionsPerTurn: 2,
    });
    expect(bandit.every((c) => !c.turns[0]!.response!.includes("||"))).toBe(true);
    expect(generateSftConversations({ ...options, actionsPerTurn: 1 })).toEqual(
      generateSftConversations(options),
    );
    expect(() => generateSftConversations({ ...options, actionsPerTurn: 3, format: sftFormat(2) })).toThrow(
      /3 actions per turn, but the prompt allows 2/,
    );
  });

  it("lets random turns try fewer moves than the guide's plans (a hesitant template)", () => {
    const options = {
      envTag: "FrozenLakeGridCoord",
      seeds: seeds.slice(0, 100),
      oracleProbability: 0.5,
      actionsPerTurn: 2,
      oracleChoice: "chat" as const,
    };
    const chats = generateSftConversations({ ...options, randomActionsPerTurn: 1 });
    const format = { actions: ["Left", "Down", "Right", "Up"], maxActionsPerTurn: 2 };
    const counts = { guided: new Set<number>(), random: new Set<number>() };
    for (const chat of chats)
      chat.turns.forEach((turn, i) => {
        const { actions } = parseResponse(`<think>${turn.response!}`, format);
        counts[chat.fromOracle[i] ? "guided" : "random"].add(actions.length);
      });
    expect([...counts.random]).toEqual([1]);
    // A guided plan is shorter than two moves only where it ends on the goal (or the budget).
    expect(counts.guided.has(2)).toBe(true);
    expect(chats[0]!.instructions).toContain("You can make up to 2 actions");
    expect(generateSftConversations({ ...options, randomActionsPerTurn: 2 })).toEqual(
      generateSftConversations(options),
    );
    expect(() => generateSftConversations({ ...options, randomActionsPerTurn: 3 })).toThrow(
      /randomActionsPerTurn must be a whole number from 1 to actionsPerTurn \(2\), got 3/,
    );
  });

  it("draws oracle-or-random once per chat when asked, every turn then following the first", () => {
    const options = { envTag: "FrozenLakeGridCoord", seeds: seeds.slice(0, 200), oracleProbability: 0.3 };
    const perChat = generateSftConversations({ ...options, oracleChoice: "chat" });
    const multiTurn = perChat.filter((c) => c.turns.length > 1);
    expect(multiTurn.length).toBeGreaterThan(50);
    for (const chat of perChat) expect(new Set(chat.fromOracle).size).toBe(1);
    const share = perChat.filter((c) => c.fromOracle[0]).length / perChat.length;
    expect(share).toBeGreaterThan(0.2);
    expect(share).toBeLessThan(0.4);
    // Each chat's thoughts keep to one template.
    for (const chat of multiTurn) {
      const guided = chat.turns.map((t) => t.response!.includes("brings me closer"));
      expect(guided).toEqual(chat.fromOracle);
    }
    // Per turn, the default, mixes the templates within chats and is the data it always was.
    const perTurn = generateSftConversations(options);
    expect(perTurn.some((c) => new Set(c.fromOracle).size === 2)).toBe(true);
    expect(generateSftConversations({ ...options, oracleChoice: "turn" })).toEqual(perTurn);
  });

  it("writes reading drills: one turn, no rules text, a fraction of a chat's length", () => {
    const drills = generateReadingDrills({
      envTag: "FrozenLake",
      seeds: seeds.slice(0, 20),
      oracleProbability: 0.3,
    });
    const chats = generateSftConversations({
      envTag: "FrozenLake",
      seeds: seeds.slice(0, 20),
      oracleProbability: 0.3,
    });
    const length = (list: typeof drills) => sftCorpus(list).join("").length;
    expect(drills.every((d) => d.turns.length === 1 && d.instructions === "")).toBe(true);
    expect(drills[0]!.messages[1]!.content).not.toContain("FrozenLake puzzle");
    expect(drills[0]!.messages[1]!.content).toContain("Turn 1:\nState:\n");
    expect(drills.map((d) => d.turns[0])).toEqual(chats.map((c) => c.turns[0]));
    expect(length(drills)).toBeLessThan(length(chats) / 3);
  });

  it("writes drills of several turns: the chats' turns without the rules text", () => {
    const options = { envTag: "FrozenLakeGridCoord", seeds: seeds.slice(0, 20), oracleProbability: 0.3 };
    const drills = generateReadingDrills({ ...options, maxTurns: 3 });
    const chats = generateSftConversations({ ...options, maxTurns: 3 });
    expect(drills.map((d) => d.turns)).toEqual(chats.map((c) => c.turns));
    expect(drills.some((d) => d.turns.length === 3)).toBe(true);
    const lastUser = drills.find((d) => d.turns.length === 3)!.messages.at(-2)!;
    expect(lastUser.content).toContain("Turn 3:\nState:\n");
    expect(
      drills.every((d) => d.instructions === "" && !d.messages[1]!.content.includes("FrozenLake puzzle")),
    ).toBe(true);
  });

  it("cuts drills from any point of a chat with start: random", () => {
    const options = { envTag: "WebShopCompact", seeds: seeds.slice(0, 40), oracleProbability: 1 };
    const chats = generateSftConversations(options);
    const drills = generateReadingDrills({ ...options, start: "random" });
    expect(drills.every((d) => d.turns.length === 1 && d.instructions === "")).toBe(true);
    for (const [i, drill] of drills.entries()) expect(chats[i]!.turns).toContainEqual(drill.turns[0]);
    // Drills of the product page (an option or buy now to choose) and of the results page, not only searches.
    const answers = drills.map((d) => d.turns[0]!.response ?? "");
    expect(new Set(answers.map((a) => /<answer>(\w+)\[/.exec(a)?.[1]))).toEqual(new Set(["search", "click"]));
    expect(answers.some((a) => a.includes("click[buy now]"))).toBe(true);
    expect(answers.some((a) => /click\[b0[a-z0-9]{8}\]/.test(a))).toBe(true);
    expect(drills[0]!.messages[1]!.content).toContain("Turn 1:\nState:\n");
  });

  it("writes another env's chats from the guide and thoughts its spec registers", () => {
    const schema = {
      type: "object",
      additionalProperties: false,
      properties: { length: { type: "integer", minimum: 1, default: 6 } },
    };
    registerEnv("sft-line", (config: { length: number }) => new LineEnv(config), schema, {
      oracle: () => "Forward",
      guide: (env, _rng, count) =>
        Array.from({ length: Math.min(count, env.config.length - env.position) }, () => "Forward"),
      guidePlansAhead: true,
      thought: (env, actions, fromGuide) =>
        fromGuide ? `${env.config.length - env.position} to go, so ${actions.join(" and ")}.` : "Who knows?",
      presets: { SftLine: { config: {}, maxActionsPerTraj: 4, description: "a line, 4 actions" } },
    });
    try {
      const [guided] = generateSftConversations({
        envTag: "SftLine",
        seeds: [0],
        oracleProbability: 1,
        actionsPerTurn: 3,
      });
      expect(guided!.turns.map((t) => [t.actionsLeft, t.response])).toEqual([
        [
          4,
          "6 to go, so Forward and Forward and Forward.</think><answer>Forward || Forward || Forward</answer>",
        ],
        [1, "3 to go, so Forward.</think><answer>Forward</answer>"],
      ]);
      const [random] = generateSftConversations({
        envTag: "SftLine",
        seeds: [0],
        oracleProbability: 0,
        actionsPerTurn: 3,
        randomActionsPerTurn: 2,
      });
      expect(random!.turns[0]!.response).toMatch(/^Who knows\?<\/think><answer>\w+ \|\| \w+<\/answer>$/);
    } finally {
      unregisterEnv("sft-line");
    }
  });
});
