//! End-to-end tests of the `heaplab` binary, as one test binary: the helpers every area needs
//! live in `common` (running heaplab, scratch directories, the compiled test programs, JSON),
//! those the runtime tests (`run`, `group_run`) share in `runtime`, and each area of the command
//! line has its module. `cargo test -p heaplab-cli -- trace::`
//! runs one area; `make fuzz` runs `fuzz::` long.
//!
//! Tools the tests run (sqlite3, python3, jq, xz, heaptrack, the allocators, perl, …) must be
//! installed: `make test` and `.ci/run` install them, and a missing one fails loudly. Tests
//! that read the shared benchmark set skip (saying so) when `../shared` is absent.

#[macro_use]
mod common;

mod access;
mod access_contexts;
mod decide;
mod measure;
mod fuzz;
mod group;
mod group_run;
mod inputs;
mod layout;
mod plan;
mod plot;
mod replay;
mod report;
mod report_html;
mod run;
mod runtime;
mod study;
mod trace;
