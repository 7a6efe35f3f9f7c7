//! Text under a cap: the writer that refuses bytes past its cap, so a message costs at most
//! the cap before the work, and the per-thread arena the bytes of an answer are frozen from.

mod arena;
mod bounded;

pub(crate) use arena::{freeze, freeze_written};
pub(crate) use bounded::{
    write_bounded, write_message_and_chain, write_panic_payload, CHAIN_SEPARATOR,
};
