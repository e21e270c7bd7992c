// Generated from native/addon/src/boundary/codes.rs: do not edit. The Rust
// test `boundary::codes::tests::typescript_is_current` fails while this file
// differs from what it generates; UPDATE_GENERATED=1 makes it rewrite it.

export const enum EventKind {
  Request = 1,
  Body = 2,
  StreamAborted = 3,
  ConnOpen = 4,
  ConnClosed = 5,
  Log = 6,
  ServerClosed = 7,
  WtSessionOpen = 8,
  WtSessionClosed = 9,
  WtStream = 10,
  WtDatagrams = 11,
  Trailers = 12,
  Sent = 13,
  PeerFieldLimit = 14,
  WtDatagram = 15,
  PeerMoved = 16,
  IdentityWanted = 17,
  ClientCertificate = 18,
}

export const enum CommandKind {
  Respond = 1,
  Headers = 2,
  Data = 3,
  Consumed = 4,
  Reset = 5,
  StopSending = 6,
  OpenStream = 7,
  Datagram = 8,
  CloseSession = 9,
}

export const enum WtStreamEvent {
  Opened = 1,
  Rejected = 2,
  Closed = 3,
}

export const enum RequestFlag {
  Complete = 1,
  HasBody = 2,
  EarlyData = 4,
  WtSession = 8,
}

export const enum AbortReason {
  PeerReset = 1,
  PeerStopSending = 2,
  ProtocolError = 3,
  FieldSectionTooLarge = 4,
}

export const enum CloseHow {
  Peer = 1,
  Local = 2,
  IdleTimeout = 3,
  Other = 4,
}

export const enum LogLevel {
  Error = 1,
  Warn = 2,
  Info = 3,
  Debug = 4,
}
