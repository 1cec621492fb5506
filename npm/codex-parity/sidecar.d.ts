// Types of codex-parity/sidecar (sidecar.js).

/** A scripted response: a list of stream events, or an object (docs/sidecar-protocol.md). */
export type ScriptedResponse = Record<string, unknown>[] | Record<string, unknown>;

/** One captured request (docs/sidecar-protocol.md, "Capture fields"). */
export interface CapturedRequest {
  index: number;
  method: string;
  path: string;
  query: string | null;
  headers: Record<string, string>;
  body: unknown;
  outcome: "scripted" | "unscripted";
  [field: string]: unknown;
}

export interface SidecarResult {
  exitCode: number;
  pending: number;
  unscripted: number;
  leftovers: string[];
  stderr: string;
}

export declare class SidecarError extends Error {
  result?: SidecarResult;
}

export declare class Sidecar {
  readonly baseUrl: string;
  readonly serverUrl: string;
  readonly protocol: number;
  readonly pid: number;
  stderr(): string;
  command(
    op: string,
    fields?: Record<string, unknown>,
    waitMs?: number,
  ): Promise<Record<string, unknown>>;
  enqueue(...responses: ScriptedResponse[]): Promise<number>;
  requests(options?: {
    min?: number;
    timeoutMs?: number;
    since?: number;
    all?: boolean;
  }): Promise<CapturedRequest[]>;
  status(): Promise<{ pending: number; served: number; unscripted: number; captured: number }>;
  reset(): Promise<void>;
  codexConfig(): string;
  close(options?: { allowLeftovers?: boolean }): Promise<SidecarResult>;
}

export declare function startSidecar(options?: {
  config?: string;
  responses?: ScriptedResponse[];
  lenient?: boolean;
  bin?: string;
  timeoutMs?: number;
}): Promise<Sidecar>;

export declare function installCodex(version?: string, options?: { bin?: string }): string;

export declare function assistantReply(text: string, respId?: string): Record<string, unknown>[];

export declare const MOCK_API_KEY: string;
