//! The binary protocol across the Rust/TypeScript boundary. Each loop turn
//! sends at most one event batch to JavaScript, and JavaScript answers with
//! at most one command batch per turn of its own event loop. Both are flat
//! little-endian buffers so a crossing costs one allocation and no per-field
//! property access. `src/native/protocol.ts` is the other half; the layout is
//! described in docs/design.md.

pub mod commands;
pub mod events;
