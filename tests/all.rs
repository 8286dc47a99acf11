//! One integration test binary: tests/suite/* by feature, helpers in tests/common/.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod suite;
