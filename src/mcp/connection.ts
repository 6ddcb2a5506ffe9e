/**
 * One MCP server as a worker keeps it: connected with the official SDK client over stdio or Streamable
 * HTTP, its tool list fetched (all pages) and refreshed on `tools/list_changed`, and reconnected with
 * backoff when the process exits or the connection drops. A call that finds the HTTP session gone (404:
 * the server never processed it) reconnects and is sent once more; a call whose connection closes while
 * it runs fails, its outcome unknown. Never throws out of its timers: failures are logged and retried.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../loop/tool-contract.js';
import { ToolError } from '../tools/errors.js';
import { type Env, readSecret } from '../tools/settings.js';
import { boundedFetch } from './bounded-fetch.js';
import type { McpServerSettings } from './settings.js';
import type { CallResult } from './tool-result.js';

/** A tool as the server lists it (fields loopgate reads). */
export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

type ServerState = 'connecting' | 'connected' | 'failed' | 'closed';

export interface ServerStatus {
  state: ServerState;
  /** Why the last attempt failed, when it did. */
  error?: string;
  tools: number;
}

interface ConnectionOptions {
  name: string;
  settings: McpServerSettings;
  env: Env;
  logger: Logger;
  /** Called with the full list after each (re)connect and each refresh. */
  onTools(tools: ListedTool[]): void;
  /** Bounds of the reconnect backoff; default 250 ms doubling to 30 s. */
  backoff?: { minMs: number; maxMs: number };
  /** Time allowed to connect and list the tools; default 15 s. */
  connectTimeoutMs?: number;
}

const MAX_PAGES = 50;
const CLIENT_INFO = { name: 'loopgate', version: '0.1.0' };

/** The server process exited, or the stream closed, while a request was in flight. */
const connectionClosed = (err: unknown) => err instanceof McpError && err.code === ErrorCode.ConnectionClosed;

/** fetch could not reach the server (refused, reset, DNS): the SDK passes fetch's TypeError on. */
const unreachable = (err: unknown) => err instanceof TypeError && /fetch failed/i.test(err.message);

/** The HTTP server forgot our session (restart, expiry): it answers 404, and processed nothing. */
const sessionLost = (err: unknown) => err instanceof StreamableHTTPError && err.code === 404;

export class ServerConnection {
  private client: Client | null = null;
  /** The client being connected, until it is `client` (a reply too large then fails the attempt). */
  private opening: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private state: ServerState = 'connecting';
  private error: string | undefined;
  private toolCount = 0;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The transport's last error (e.g. a reply over maxReplyBytes), named when a call loses its connection. */
  private transportError: string | undefined;

  constructor(private readonly options: ConnectionOptions) {}

  get name(): string {
    return this.options.name;
  }

  status(): ServerStatus {
    return { state: this.state, ...(this.error ? { error: this.error } : {}), tools: this.toolCount };
  }

  /** First connection; resolves either way (a failure is in `status()` and retried with backoff). */
  async start(): Promise<void> {
    await this.connect().catch(() => {});
  }

  /**
   * Calls a tool. `signal` aborts it: the SDK then sends `notifications/cancelled` to the server.
   * @throws ToolError `mcp_unavailable` when the server is not connected, `mcp_server_lost` when the
   *   connection closed during the call; the SDK's own errors otherwise.
   */
  async call(tool: string, args: unknown, signal: AbortSignal, timeoutMs: number): Promise<CallResult> {
    const send = async (client: Client) =>
      (await client.callTool(
        { name: tool, arguments: (args ?? {}) as Record<string, unknown> },
        undefined,
        // The engine's own timeout aborts `signal` first; the SDK's is a backstop.
        { signal, timeout: timeoutMs + 5_000, maxTotalTimeout: timeoutMs + 5_000 },
      )) as CallResult;
    const client = await this.ready();
    try {
      return await send(client);
    } catch (err) {
      if (sessionLost(err) && !signal.aborted) {
        this.options.logger.warn(
          { server: this.name },
          'MCP session lost; reconnecting and sending the call again',
        );
        return send(await this.reconnectNow(client));
      }
      // An HTTP server that cannot be reached: reconnect in the background (its tools fail meanwhile).
      if (this.options.settings.url !== undefined && unreachable(err))
        this.lost(client, (err as Error).message);
      if (connectionClosed(err)) {
        const why = this.transportError ? ` (${this.transportError})` : '';
        throw new ToolError(
          'mcp_server_lost',
          `the MCP server ${this.name} exited or dropped the connection during the call${why}; whether it took effect is unknown`,
        );
      }
      throw err;
    }
  }

  /** Fetches the tool list again (after `tools/list_changed`). */
  async refresh(): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      await this.publishTools(client);
    } catch (err) {
      this.options.logger.warn({ err, server: this.name }, 'MCP tool list refresh failed');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.state = 'closed';
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => {});
  }

  private async ready(): Promise<Client> {
    if (this.client) return this.client;
    if (this.connecting) return this.connecting.catch(() => this.unavailable());
    return this.unavailable();
  }

  private unavailable(): never {
    throw new ToolError(
      'mcp_unavailable',
      `the MCP server ${this.name} is not connected${this.error ? ` (${this.error})` : ''}; try again later or answer without it`,
    );
  }

  private async reconnectNow(stale: Client): Promise<Client> {
    if (this.client === stale) {
      this.client = null;
      await stale.close().catch(() => {});
    }
    return this.connect();
  }

  private connect(): Promise<Client> {
    if (this.connecting) return this.connecting;
    this.state = 'connecting';
    this.connecting = this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const { logger } = this.options;
    const client = new Client(CLIENT_INFO, {
      capabilities: {},
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 50,
          onChanged: () => {
            this.refresh().catch(() => {});
          },
        },
      },
    });
    this.opening = client;
    try {
      await client.connect(this.transport(), { timeout: this.options.connectTimeoutMs ?? 15_000 });
      await this.publishTools(client);
    } catch (err) {
      this.opening = null;
      await client.close().catch(() => {});
      this.error = (err as Error).message;
      this.state = this.closed ? 'closed' : 'failed';
      logger.warn({ server: this.name, err }, 'MCP server could not be reached; retrying with backoff');
      this.scheduleRetry();
      throw err;
    }
    this.opening = null;
    if (this.closed) {
      await client.close().catch(() => {});
      throw new Error('closed');
    }
    client.onclose = () => this.lost(client);
    // The first error is the cause; what follows a dropped buffer is noise (half a message parsed).
    client.onerror = (err: Error) => {
      this.transportError ??= err.message.slice(0, 300);
    };
    this.client = client;
    this.state = 'connected';
    this.error = undefined;
    this.transportError = undefined;
    this.attempt = 0;
    logger.info({ server: this.name, tools: this.toolCount }, 'MCP server connected');
    return client;
  }

  private lost(client: Client, why = 'the connection closed'): void {
    if (this.client !== client || this.closed) return;
    this.client = null;
    this.state = 'failed';
    this.error = why;
    client.close().catch(() => {});
    this.options.logger.warn({ server: this.name }, 'MCP server connection closed; reconnecting');
    this.scheduleRetry();
  }

  /** An HTTP reply over maxReplyBytes: the connection is dropped (as stdio's is) and made again. */
  private replyTooLarge(why: string): void {
    this.transportError = why;
    this.options.logger.warn(
      { server: this.name },
      `MCP server ${this.name}: ${why}; dropping the connection`,
    );
    if (this.client) this.lost(this.client, why);
    else this.opening?.close().catch(() => {});
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    const { minMs, maxMs } = this.options.backoff ?? { minMs: 250, maxMs: 30_000 };
    const delay = Math.min(maxMs, minMs * 2 ** this.attempt);
    this.attempt += 1;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.connect().catch(() => {});
    }, delay);
    this.retryTimer.unref();
  }

  private async publishTools(client: Client): Promise<void> {
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...(listed.tools as ListedTool[]));
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    this.toolCount = tools.length;
    this.options.onTools(tools);
  }

  private transport(): Transport {
    const { settings, env, name } = this.options;
    if (settings.url !== undefined) {
      const headers = Object.fromEntries(
        Object.entries(settings.headersEnv ?? {}).map(([header, variable]) => [
          header,
          readSecret(env, variable, `mcp.servers.${name}.headersEnv.${header}`),
        ]),
      );
      return new StreamableHTTPClientTransport(new URL(settings.url), {
        requestInit: { headers },
        fetch: boundedFetch(settings.maxReplyBytes, (why) => this.replyTooLarge(why)),
      });
    }
    const [command, ...first] = settings.command ?? [];
    const transport = new StdioClientTransport({
      command: command ?? '',
      args: [...first, ...(settings.args ?? [])],
      env: Object.fromEntries(
        Object.entries(settings.envFromEnv ?? {}).map(([variable, from]) => [
          variable,
          readSecret(env, from, `mcp.servers.${name}.envFromEnv.${variable}`),
        ]),
      ),
      ...(settings.cwd ? { cwd: settings.cwd } : {}),
      stderr: 'pipe',
      maxBufferSize: settings.maxReplyBytes,
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.options.logger.debug(
        { server: name, stderr: chunk.toString('utf8').slice(0, 2_000) },
        'MCP server wrote to stderr',
      );
    });
    return transport;
  }
}
