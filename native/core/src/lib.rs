//! simscan's native core: the work done per byte and per file.
//!
//! Pure Rust, no Python: the binding crate (`native/py`) exposes it as `simscan._native`.

pub mod checksum;
pub mod code;
pub mod decode;
pub mod detect;
pub mod evidence;
pub mod fingerprint;
pub mod grouping;
pub mod manber;
pub mod minhash;
pub mod normalize;
pub mod read;
pub mod runs;
pub mod simtables;
pub mod tables;
pub mod winnow;
