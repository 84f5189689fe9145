import { createEnv, OpenEnvClient } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { resolveSettings, trainingGroups, validationManager } from "../src/index.js";

describe("envServers", () => {
  it("is null by default: every env plays in process", async () => {
    const { settings, sources } = await resolveSettings();
    expect(settings.envServers).toBeNull();
    expect(sources.envServers).toBe("default");
    expect(trainingGroups(settings).every((groups) => groups.server === undefined)).toBe(true);
  });

  it("takes Tag=URL (OpenEnv) and gives that tag's training and validation envs a client of the server", async () => {
    const { settings } = await resolveSettings({
      overrides: [
        "envs=FrozenLake,Bandit",
        "envServers=Bandit=http://10.0.0.2:8000",
        "validation.groupsPerEnv=2",
      ],
    });
    const server = { url: "http://10.0.0.2:8000", protocol: "openenv" };
    expect(settings.envServers).toEqual({ Bandit: server });
    expect(trainingGroups(settings).map((groups) => [groups.tag, groups.server])).toEqual([
      ["FrozenLake", undefined],
      ["Bandit", server],
    ]);
    const slots = validationManager(settings).slots;
    expect(slots.map((slot) => [slot.tag, slot.env instanceof OpenEnvClient])).toEqual([
      ["FrozenLake", false],
      ["FrozenLake", false],
      ["Bandit", true],
      ["Bandit", true],
    ]);
    // A remote env is named and configured as the local one, so records and caches key it the same.
    const local = createEnv("Bandit");
    const remote = slots[2]!.env;
    expect([remote.name, remote.config, remote.actions, remote.instructions]).toEqual([
      local.name,
      local.config,
      local.actions,
      local.instructions,
    ]);
  });

  it("refuses a server for a tag the run does not play, a URL that is not http, or an unknown protocol", async () => {
    await expect(
      resolveSettings({ overrides: ["envServers=Sokoban=http://127.0.0.1:8000"] }),
    ).rejects.toThrow(/envServers: "Sokoban" is not among envs or validation\.envs/);
    await expect(resolveSettings({ overrides: ["envServers=Bandit=ftp://host"] })).rejects.toThrow(
      /envServers/,
    );
    await expect(
      resolveSettings({
        overrides: ["envServers.Bandit.url=http://host:1", "envServers.Bandit.protocol=grpc"],
      }),
    ).rejects.toThrow(/envServers/);
    const { settings } = await resolveSettings({
      overrides: ["envServers.Bandit.url=http://host:1", "envServers.Bandit.protocol=agentgym"],
    });
    expect(settings.envServers).toEqual({ Bandit: { url: "http://host:1", protocol: "agentgym" } });
  });
});
