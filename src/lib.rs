//! `routines`: runs LLM agent routines unattended.
//!
//! See docs/ARCHITECTURE.md for the module map and the flow of a run.

pub mod config;
pub mod diag;
pub mod llm;
pub mod yaml;
