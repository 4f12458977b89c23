//! simscan's native core: the work done per byte and per file.
//!
//! Pure Rust, no Python: the binding crate (`native/py`) exposes it as `simscan._native`.

pub mod checksum;
