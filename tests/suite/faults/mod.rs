//! Faults a machine causes at the worst moment (issue 13), each reproduced with real
//! processes, signals and sockets, and checked in the database.

mod cluster;
mod cut_off;
mod database;
mod deliveries;
mod frozen;
mod full_disk;
mod held;
mod overlap;
mod pid_one;
mod queue_window;
mod reload;
mod stopping;
