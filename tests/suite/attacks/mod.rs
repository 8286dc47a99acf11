//! The attack suite (issue 12): each case plays a hostile model, webhook sender or file
//! author end to end through the binary, and checks what happened in the database, in the
//! files and mail delivered, in the logs, or in the next request the model received; each
//! has a benign counterpart that must still work.

mod approach;
mod channels;
mod encodings;
mod engine_files;
mod files;
mod git_root;
mod provider;
mod race;
mod records;
mod records_act;
mod scene;
mod schedule_limits;
mod shell;
mod sockets;
