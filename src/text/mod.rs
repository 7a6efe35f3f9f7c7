//! Text under a cap: the writer that refuses bytes past its cap, so a message costs at most
//! the cap before the work, and the per-thread arena the bytes of an answer are frozen from.

pub(crate) mod arena;
pub(crate) mod bounded;
