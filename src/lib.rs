//! `routines`: runs LLM agent routines unattended.
//!
//! See docs/ARCHITECTURE.md for the module map and the flow of a run.

pub mod agent;
pub mod clock;
pub mod config;
pub mod daemon;
pub mod delivery;
pub mod diag;
pub mod engine;
pub mod eval;
pub mod heartbeat;
pub mod llm;
pub mod memory;
pub mod policy;
pub mod routine;
pub mod sandbox;
pub mod skills;
pub mod status;
pub mod store;
pub mod tools;
pub mod yaml;
