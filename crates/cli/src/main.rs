//! `ork`: the remote reconciler runtime. See `cli.rs` for the commands.

mod cli;
mod generate;
mod http;
mod output;
mod run;
mod simulate;
mod validate;

fn main() -> std::process::ExitCode {
    cli::main()
}
