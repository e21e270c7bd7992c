//! The binary protocol across the Rust/TypeScript boundary. Each loop turn
//! sends at most one event batch to JavaScript, and JavaScript answers with
//! at most one command batch per turn of its own event loop. Both are flat
//! little-endian buffers so a crossing costs one allocation and no per-field
//! property access. `codes` holds every code of it, `events` and `commands`
//! the two directions, `link` the batch sequence and acknowledgements.
//! `src/native/protocol.ts` is the other half (its codes generated from
//! `codes`); the layout is described in docs/design.md.

pub mod codes;
pub mod commands;
pub mod events;
pub mod link;

#[cfg(test)]
mod golden;
