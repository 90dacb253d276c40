//! The exec transport: "a bash script can be a reconciler". The request JSON goes to the
//! program's stdin, the answer is read from its stdout; exit code 0 means it answered.
//!
//! The program gets an explicit environment (`PATH`, what the Katalog declares, and
//! `ORK_EXEC_ID`, a random value that marks it and what it starts) and working directory, and its
//! arguments are passed as they are: no shell ever sees CR content. When the call ends without an
//! answer (timeout, too much output, or the call is dropped) the command and every process it
//! started are killed (how they are found: `exec/descendants.rs`).

mod descendants;

use std::collections::BTreeMap;
use std::fmt;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::error::{CallError, SNIPPET_CHARS};
use crate::http::random_hex;
use crate::text::{Keep, Redactor};
use descendants::{MARKER_VAR, ProcessTree};

/// How much of stderr is kept for error messages (the end, where the reason usually is).
const STDERR_TAIL: usize = 2048;

/// How long stderr is still read after the command was killed, for its last lines.
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// How long a kill may take before the call reports anyway.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// One run of the command. `Debug` shows the names of the variables, not their values.
pub struct ExecCall<'a> {
    /// Program and arguments.
    pub command: &'a [String],
    pub working_dir: &'a Path,
    /// Variables besides `PATH` (and `ORK_EXEC_ID`, which ork sets last and which these cannot
    /// replace).
    pub env: &'a BTreeMap<String, String>,
    pub body: Vec<u8>,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl fmt::Debug for ExecCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecCall")
            .field("command", &self.command)
            .field("working_dir", &self.working_dir)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("body_bytes", &self.body.len())
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

/// How the command's run ended.
enum Ended {
    Exited(Vec<u8>, std::io::Result<ExitStatus>),
    TooLarge,
    TimedOut,
}

/// Kills the command's processes when dropped while armed: a call that is cancelled (its future
/// dropped) leaves nothing running either.
struct Guard {
    tree: ProcessTree,
    armed: bool,
}

impl Guard {
    /// Kills everything now, off the async threads, and waits (bounded) until it is gone.
    async fn kill(&mut self) {
        self.armed = false;
        let tree = self.tree.clone();
        let work = move || {
            let killed = tree.kill_all();
            descendants::wait_gone(&killed, KILL_WAIT);
        };
        if tokio::task::spawn_blocking(work).await.is_err() {
            self.tree.kill_all();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.armed {
            self.tree.kill_all();
        }
    }
}

/// Runs the command and returns its stdout.
///
/// # Errors
/// The program cannot start, exits non-zero, outlives the timeout, writes more than `max_bytes`
/// (in both cases it and everything it started are killed), or writes something that is not
/// JSON; each carries the cleaned tail of stderr.
pub async fn exec(call: ExecCall<'_>) -> Result<Vec<u8>, CallError> {
    let Some((program, args)) = call.command.split_first() else {
        return Err(CallError::Config("command is empty".into()));
    };
    // The child resolves a relative program after changing directory, so anchor both here.
    let working_dir = if call.working_dir.is_absolute() {
        call.working_dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(call.working_dir))
            .unwrap_or_else(|_| call.working_dir.to_path_buf())
    };
    let path = if program.contains('/') {
        working_dir.join(program)
    } else {
        program.into()
    };
    let marker = random_hex(16);
    let mut child = Command::new(&path)
        .args(args)
        .current_dir(&working_dir)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .envs(call.env)
        .env(MARKER_VAR, &marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group: the first thing the kill looks for.
        .process_group(0)
        .spawn()
        .map_err(|e| CallError::ExecSpawn {
            program: program.clone(),
            reason: e.to_string(),
        })?;
    let (Some(mut stdin), Some(stdout), Some(stderr), Some(pid)) = (
        child.stdin.take(),
        child.stdout.take(),
        child.stderr.take(),
        child.id(),
    ) else {
        return Err(CallError::Config(
            "the command's pipes were not set up".into(),
        ));
    };
    let mut guard = Guard {
        tree: ProcessTree::new(pid, &marker, &[stdout.as_raw_fd(), stderr.as_raw_fd()]),
        armed: true,
    };
    let body = call.body;
    // Feed stdin while reading stdout: a program that answers before reading everything must
    // not deadlock against a full pipe. A program that ignores stdin closes it early; fine.
    let feed = async move {
        let _ = stdin.write_all(&body).await;
        drop(stdin);
    };
    let limit = call.max_bytes;
    let mut tail = Vec::new();
    let ended = {
        let stdout_done = async { tokio::join!(feed, read_capped(stdout, limit)).1 };
        let stderr_done = read_tail(stderr, &mut tail);
        tokio::pin!(stdout_done, stderr_done);
        let run = async {
            let mut stderr_open = true;
            let out = loop {
                tokio::select! {
                    out = &mut stdout_done => break out,
                    () = &mut stderr_done, if stderr_open => stderr_open = false,
                }
            };
            // Over the limit: stop at once, the command may go on writing (or hold stderr).
            let Some(out) = out else {
                return Ended::TooLarge;
            };
            if stderr_open {
                (&mut stderr_done).await;
            }
            Ended::Exited(out, child.wait().await)
        };
        let ended = tokio::time::timeout(call.timeout, run)
            .await
            .unwrap_or(Ended::TimedOut);
        if !matches!(ended, Ended::Exited(..)) {
            guard.kill().await;
            // The writers are gone: what they wrote last is still in the pipe.
            let _ = tokio::time::timeout(STDERR_DRAIN, &mut stderr_done).await;
        }
        ended
    };
    if !matches!(ended, Ended::Exited(..)) {
        // Reap it; bounded, for a program ork may not signal (set-uid): kill_on_drop then tries.
        let _ = tokio::time::timeout(KILL_WAIT, child.wait()).await;
    }
    guard.armed = false;
    let stderr = tail_note(&tail);
    match ended {
        Ended::TimedOut => Err(CallError::ExecTimeout {
            program: program.clone(),
            after: call.timeout,
            stderr,
        }),
        Ended::TooLarge => Err(CallError::ExecTooLarge {
            program: program.clone(),
            limit,
            stderr,
        }),
        Ended::Exited(out, status) => {
            let status = status.map_err(|e| CallError::ExecSpawn {
                program: program.clone(),
                reason: e.to_string(),
            })?;
            if !status.success() {
                return Err(CallError::ExecFailed {
                    program: program.clone(),
                    status: status.to_string(),
                    stderr,
                });
            }
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(&out) {
                return Err(CallError::ExecGarbage {
                    program: program.clone(),
                    reason: e.to_string(),
                    stderr,
                });
            }
            Ok(out)
        }
    }
}

/// Reads all of `r`, or `None` as soon as it passes `limit` bytes.
async fn read_capped(mut r: impl AsyncRead + Unpin, limit: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return Some(out),
            Ok(n) => {
                out.extend_from_slice(&chunk[..n]);
                if out.len() as u64 > limit {
                    return None;
                }
            }
        }
    }
}

/// Reads all of `r` into `tail`, keeping the last [`STDERR_TAIL`] bytes. What was read stays in
/// `tail` when the future is dropped half-way.
async fn read_tail(mut r: impl AsyncRead + Unpin, tail: &mut Vec<u8>) {
    let mut chunk = [0u8; 8192];
    while let Ok(n) = r.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
}

/// `; stderr: <last line(s)>`, cleaned and cut to [`SNIPPET_CHARS`], or nothing.
fn tail_note(stderr: &[u8]) -> String {
    let text =
        Redactor::default().sanitize(&String::from_utf8_lossy(stderr), SNIPPET_CHARS, Keep::End);
    if text.is_empty() {
        String::new()
    } else {
        format!("; stderr: {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    async fn run(command: &[String], timeout_ms: u64, max: u64) -> Result<Vec<u8>, CallError> {
        let env = BTreeMap::from([("GREETING".to_string(), "hi".to_string())]);
        exec(ExecCall {
            command,
            working_dir: Path::new("/tmp"),
            env: &env,
            body: br#"{"key":"ns/a"}"#.to_vec(),
            timeout: Duration::from_millis(timeout_ms),
            max_bytes: max,
        })
        .await
    }

    #[tokio::test]
    async fn answers_from_stdout_with_stdin_env_and_dir() {
        let cmd = sh(
            r#"read req; printf '{"req":%s,"env":"%s","dir":"%s"}' "$req" "$GREETING" "$(pwd)""#,
        );
        let out = run(&cmd, 5000, 1024).await.expect("answers");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["req"]["key"], "ns/a");
        assert_eq!(v["env"], "hi");
        assert_eq!(v["dir"], "/tmp");
    }

    #[tokio::test]
    async fn only_path_and_declared_variables_reach_the_command() {
        // HOME is set for the test process but not declared, so the command must not see it.
        let cmd = sh(r#"printf '{"home":"%s"}' "${HOME:-unset}""#);
        let out = run(&cmd, 5000, 1024).await.expect("answers");
        assert_eq!(String::from_utf8_lossy(&out), r#"{"home":"unset"}"#);
    }

    #[tokio::test]
    async fn non_zero_exit_carries_the_stderr_tail() {
        let err = run(&sh("echo 'bad input' >&2; exit 3"), 5000, 1024)
            .await
            .expect_err("exit 3");
        let msg = err.to_string();
        assert!(
            msg.contains("exit status: 3") && msg.contains("stderr: bad input"),
            "{msg}"
        );
    }

    /// Live `sleep` processes whose argument is `arg` (zombies do not count: they are gone).
    fn sleepers(arg: &str) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                });
                !zombie
                    && args.first().is_some_and(|a| a.ends_with(b"sleep"))
                    && args.get(1) == Some(&arg.as_bytes())
            })
            .collect()
    }

    /// A sleep duration no other process uses: 300 s and a fraction unique to this test run.
    fn unique_sleep(n: u32) -> String {
        format!("300.{}{n}", std::process::id())
    }

    async fn assert_all_gone(args: &[String]) {
        // The kill is synchronous; re-parented processes may need init a moment to be reaped.
        for _ in 0..100 {
            if args.iter().all(|a| sleepers(a).is_empty()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for a in args {
            assert!(
                sleepers(a).is_empty(),
                "sleep {a} survived: {:?}",
                sleepers(a)
            );
        }
    }

    #[tokio::test]
    async fn a_slow_command_and_what_it_started_are_killed_at_the_timeout() {
        let marker = format!("/tmp/ork-exec-test-{}", std::process::id());
        let script = format!("(sleep 2; touch {marker}) & sleep 30");
        let started = std::time::Instant::now();
        let err = run(&sh(&script), 200, 1024).await.expect_err("timeout");
        assert!(matches!(err, CallError::ExecTimeout { .. }), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "did not wait for the sleep"
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            !Path::new(&marker).exists(),
            "the background job was killed too"
        );
    }

    #[tokio::test]
    async fn descendants_that_called_setsid_are_gone_after_a_timeout() {
        let args: Vec<String> = (1..=4).map(unique_sleep).collect();
        // 1: its own session, still the shell's child; 2: its own session and orphaned (its
        // parent exited), found by the environment marker and the pipes; 3: orphaned with an
        // empty environment, found by the stdout pipe it holds; 4: orphaned with every pipe
        // closed, found by the environment marker.
        let script = format!(
            "setsid sleep {} & \
             (setsid sleep {} &) ; \
             (env -i /usr/bin/setsid /usr/bin/sleep {} 2>/dev/null </dev/null &) ; \
             (setsid sleep {} </dev/null >/dev/null 2>&1 &) ; \
             sleep 30",
            args[0], args[1], args[2], args[3]
        );
        let started = std::time::Instant::now();
        let err = run(&sh(&script), 1000, 1024).await.expect_err("timeout");
        assert!(matches!(err, CallError::ExecTimeout { .. }), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_all_gone(&args).await;
    }

    #[tokio::test]
    async fn a_dropped_call_kills_what_the_command_started() {
        let arg = unique_sleep(5);
        let script = format!("setsid sleep {arg} & sleep 30");
        let cmd = sh(&script);
        let call = run(&cmd, 30_000, 1024);
        assert!(
            tokio::time::timeout(Duration::from_millis(500), call)
                .await
                .is_err(),
            "still running"
        );
        assert_all_gone(&[arg]).await;
    }

    #[tokio::test]
    async fn a_timeout_keeps_the_stderr_tail() {
        let err = run(&sh("echo 'still working on ns/a' >&2; sleep 30"), 500, 1024)
            .await
            .expect_err("timeout");
        let msg = err.to_string();
        assert!(matches!(err, CallError::ExecTimeout { .. }), "{msg}");
        assert!(msg.ends_with("stderr: still working on ns/a"), "{msg}");
    }

    #[tokio::test]
    async fn output_over_the_limit_from_a_running_command_is_too_large_not_a_timeout() {
        let started = std::time::Instant::now();
        let err = run(
            &sh("echo starting >&2; head -c 100000 /dev/zero; sleep 30"),
            10_000,
            1024,
        )
        .await
        .expect_err("too large");
        let msg = err.to_string();
        assert!(
            matches!(err, CallError::ExecTooLarge { limit: 1024, .. }),
            "{msg}"
        );
        assert!(
            msg.contains("response larger than the limit of 1024 bytes"),
            "{msg}"
        );
        assert!(msg.contains("stderr: starting"), "{msg}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let err = run(&sh("while :; do echo xxxxxxxxxxxxxxxx; done"), 10_000, 1024)
            .await
            .expect_err("too large");
        assert!(matches!(err, CallError::ExecTooLarge { .. }), "{err}");
    }

    #[tokio::test]
    async fn stderr_in_errors_is_cut_and_cleaned() {
        let script =
            "printf 'noise %.0s' $(seq 200) >&2; printf '\\033[31mred\\r\\nreason\\n' >&2; exit 1";
        let err = run(&sh(script), 5000, 1024).await.expect_err("exit 1");
        let msg = err.to_string();
        let tail = msg.split_once("stderr: ").expect("stderr").1;
        assert!(tail.chars().count() <= SNIPPET_CHARS, "{tail}");
        assert!(tail.ends_with("red reason"), "{tail:?}");
        assert!(!msg.chars().any(char::is_control), "{msg:?}");
    }

    #[tokio::test]
    async fn garbage_and_huge_stdout_are_failures() {
        let err = run(&sh("echo not-json; echo oops >&2"), 5000, 1024)
            .await
            .expect_err("garbage");
        assert!(
            err.to_string().contains("not a JSON answer") && err.to_string().contains("oops"),
            "{err}"
        );
        let err = run(&sh("head -c 100000 /dev/zero"), 5000, 1024)
            .await
            .expect_err("huge");
        assert!(matches!(err, CallError::ExecTooLarge { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_relative_program_is_found_from_a_relative_working_dir() {
        let dir = std::env::temp_dir().join(format!("ork-exec-rel-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("scripts")).expect("dir");
        let script = dir.join("scripts/answer.sh");
        std::fs::write(&script, "#!/bin/sh\necho '{\"ok\":true}'\n").expect("script");
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .expect("chmod");
        let relative = dir.strip_prefix("/").expect("absolute temp dir");
        let env = BTreeMap::new();
        let cwd = std::env::current_dir().expect("cwd");
        let up = cwd
            .components()
            .skip(1)
            .map(|_| "..")
            .collect::<Vec<_>>()
            .join("/");
        let working_dir = Path::new(&up).join(relative).join("scripts");
        let out = exec(ExecCall {
            command: &["./answer.sh".to_string()],
            working_dir: &working_dir,
            env: &env,
            body: Vec::new(),
            timeout: Duration::from_secs(5),
            max_bytes: 1024,
        })
        .await
        .expect("runs");
        assert_eq!(String::from_utf8_lossy(&out).trim(), r#"{"ok":true}"#);
    }

    #[tokio::test]
    async fn a_missing_program_is_reported() {
        let err = run(&["./no-such-reconciler".to_string()], 5000, 1024)
            .await
            .expect_err("missing");
        assert!(err.to_string().contains("cannot start"), "{err}");
    }
}
