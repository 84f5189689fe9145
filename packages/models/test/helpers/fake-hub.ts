/**
 * A tiny stand-in for the Hugging Face Hub's HTTP API on 127.0.0.1, serving just what
 * @huggingface/hub's modelInfo, listFiles and downloadFile ask for. Large files are served as LFS
 * files: the resolve URL redirects to a CDN-like path, as the real Hub does.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeRepo {
  readonly id: string;
  readonly commit: string;
  /** Other revision names (branches, tags) pointing at the commit; "main" always does. */
  readonly refs?: readonly string[];
  readonly files: Readonly<Record<string, Uint8Array>>;
}

export interface FakeHub {
  readonly url: string;
  /** Every request as "METHOD path". */
  readonly requests: string[];
  close(): Promise<void>;
}

/** Files at least this big are stored as LFS files, like weights on the real Hub. */
const LFS_THRESHOLD = 1024;

export function gitBlobId(content: Uint8Array): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

export function sha256(content: Uint8Array): string {
  return createHash("sha256").update(content).digest("hex");
}

function isLfs(content: Uint8Array): boolean {
  return content.length >= LFS_THRESHOLD;
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "Content-Type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

function notFound(response: ServerResponse, code: string) {
  sendJson(response, 404, { error: `${code}` }, { "X-Error-Code": code });
}

function sendFile(request: IncomingMessage, response: ServerResponse, content: Uint8Array, etag: string) {
  const headers = { ETag: `"${etag}"`, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream" };
  const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? "");
  if (range) {
    const start = Number(range[1]);
    const end = Math.min(Number(range[2]), content.length - 1);
    response.writeHead(206, { ...headers, "Content-Range": `bytes ${start}-${end}/${content.length}` });
    response.end(Buffer.from(content.subarray(start, end + 1)));
    return;
  }
  response.writeHead(200, { ...headers, "Content-Length": String(content.length) });
  // Two writes, so a client sees the body arrive in more than one chunk. The second goes out from a
  // setImmediate queued by a timer: the event loop runs timers, then polls sockets (the client, in this
  // same process, reads the first half there), then runs immediates — so the halves cannot be read as
  // one, however late a loaded machine fires the timer (a plain timer could fire before that poll).
  const half = Math.floor(content.length / 2);
  response.write(Buffer.from(content.subarray(0, half)));
  setTimeout(() => setImmediate(() => response.end(Buffer.from(content.subarray(half)))), 5);
}

export async function startFakeHub(repos: readonly FakeRepo[]): Promise<FakeHub> {
  const requests: string[] = [];
  const byId = new Map(repos.map((repo) => [repo.id, repo]));
  const blobsBySha = new Map<string, Uint8Array>();
  for (const repo of repos)
    for (const content of Object.values(repo.files)) blobsBySha.set(sha256(content), content);

  const revisionOf = (repo: FakeRepo, revision: string) =>
    revision === repo.commit || revision === "main" || revision === "HEAD" || repo.refs?.includes(revision);

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const path = decodeURIComponent(url.pathname);
    requests.push(`${request.method} ${path}`);

    const info = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(path);
    if (info) {
      const repo = byId.get(info[1]!);
      if (!repo) return notFound(response, "RepoNotFound");
      if (!revisionOf(repo, info[2]!)) return notFound(response, "RevisionNotFound");
      return sendJson(response, 200, {
        _id: `id-${repo.id}`,
        id: repo.id,
        sha: repo.commit,
        private: false,
        downloads: 0,
        likes: 0,
        lastModified: "2024-09-19T00:00:00.000Z",
      });
    }

    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)$/.exec(path);
    if (tree) {
      const repo = byId.get(tree[1]!);
      if (!repo) return notFound(response, "RepoNotFound");
      if (tree[2] !== repo.commit) return notFound(response, "RevisionNotFound"); // resolveModel asks by commit
      const entries = Object.entries(repo.files).map(([file, content]) => ({
        type: "file",
        path: file,
        size: content.length,
        oid: gitBlobId(content),
        ...(isLfs(content) ? { lfs: { oid: sha256(content), size: content.length, pointerSize: 134 } } : {}),
      }));
      return sendJson(response, 200, entries);
    }

    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (resolve) {
      const repo = byId.get(resolve[1]!);
      if (!repo) return notFound(response, "RepoNotFound");
      if (!revisionOf(repo, resolve[2]!)) return notFound(response, "RevisionNotFound");
      const content = repo.files[resolve[3]!];
      if (!content) return notFound(response, "EntryNotFound");
      if (isLfs(content)) {
        response.writeHead(302, {
          Location: `/cdn/${sha256(content)}`,
          "X-Linked-Etag": `"${sha256(content)}"`,
        });
        return response.end();
      }
      return sendFile(request, response, content, gitBlobId(content));
    }

    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(path);
    if (cdn && blobsBySha.has(cdn[1]!)) return sendFile(request, response, blobsBySha.get(cdn[1]!)!, cdn[1]!);

    notFound(response, "NotFound");
  });

  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}

/** An address where nothing listens: connecting fails at once with ECONNREFUSED. */
export async function unreachableUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
  return `http://127.0.0.1:${port}`;
}
