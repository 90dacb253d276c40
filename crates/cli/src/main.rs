//! `ork`: the remote reconciler runtime. See `cli.rs` for the commands.

mod args;
mod cli;
mod commands;
mod conform;
mod controllers;
mod diff;
mod e2e;
mod explain;
mod generate;
mod guard;
mod hints;
mod http;
mod init;
mod inspector_client;
mod junit;
mod kubeconfig;
mod listener;
mod output;
mod record;
mod reference;
mod retry;
mod rollout;
mod run;
mod secrets;
mod simulate;
mod simulate_file;
mod status_page;
mod testcase;
mod validate;
mod validate_cluster;
mod webhook;

// Allocation is a fifth of ork's CPU at load (buffers of every request, answer and watch event);
// mimalloc halves it for about the same resident memory as glibc's allocator (`cargo xtask
// bench`: 35 against 34 MiB at 2,000 CRs). `--no-default-features` leaves it out, for heap
// profilers that see only the system allocator's heap.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
