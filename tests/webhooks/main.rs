//! The webhook verifiers and the extractor (feature `webhooks`): the senders' documented
//! examples, the classic verification bugs one by one, and parallel deliveries over TCP
//! counted exactly.

#[path = "../common/mod.rs"]
mod common;

mod answer;
mod bounds;
mod classic;
mod cost;
mod events;
mod guide;
mod keep_alive;
mod load;
mod misuse;
mod proof;
mod question_mark;
mod replay;
mod replay_keys;
mod replay_metrics;
mod server;
mod sign;
mod signer;
mod vectors;
