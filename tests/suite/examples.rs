//! The example routines of the repository validate and run.
