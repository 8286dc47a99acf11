//! Routines through the real binary: every command, exit code and --json shape.
