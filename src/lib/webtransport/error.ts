// The W3C API's WebTransportError for Node, where there is no global one:
// `source` says whether a stream or the session failed, `streamErrorCode`
// carries the peer's application error code when a stream was reset or
// stopped with one.

export type WebTransportErrorSource = 'stream' | 'session';

export interface WebTransportErrorInit {
  source?: WebTransportErrorSource;
  streamErrorCode?: number | null;
}

export class WebTransportError extends Error {
  readonly source: WebTransportErrorSource;
  readonly streamErrorCode: number | null;

  constructor(message = '', init: WebTransportErrorInit = {}) {
    super(message);
    this.name = 'WebTransportError';
    this.source = init.source ?? 'stream';
    this.streamErrorCode = init.streamErrorCode ?? null;
  }
}
