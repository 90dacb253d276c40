//! Every process an exec command started, found through `/proc` and killed together (SPEC §11:
//! on timeout every descendant is gone, including ones that called `setsid`).
//!
//! Why not simpler means:
//! - Killing the process group misses whatever called `setsid` or `setpgid`.
//! - Walking parent links from the command misses a process whose parent already exited: it was
//!   re-parented to init (`(setsid daemon &)` does exactly that).
//! - Making ork a child subreaper (`PR_SET_CHILD_SUBREAPER`) keeps orphans under ork but changes
//!   the whole process, leaves ork to reap zombies it did not spawn (racing tokio's own reaping),
//!   and still cannot tell which of several concurrent commands an orphan came from.
//!
//! So a process belongs to the command when any of these holds, and the set is closed over
//! parent links:
//! - it is the command, or is in a process group or session that the command or a member leads;
//! - its environment holds the command's unique `ORK_EXEC_ID=<random>` (inherited through
//!   `setsid`, double forks and re-parenting; lost only by a program that clears its environment);
//! - it holds one of the command's stdout/stderr pipes (what a daemon that cleared its
//!   environment but kept the pipes still does — and what keeps ork waiting for end of file).
//!
//! The members are stopped (SIGSTOP) as they are found, so none can fork while the scan goes on,
//! and the scan repeats until it finds no new one; then all get SIGKILL. Signals go through a
//! pidfd opened after the start time was checked again, so a recycled pid is never hit.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

/// The environment variable that marks the command and everything it starts.
pub(crate) const MARKER_VAR: &str = "ORK_EXEC_ID";

/// Scans before giving up on a command that keeps forking faster than it is stopped.
const MAX_ROUNDS: usize = 100;

/// What identifies the processes of one command.
#[derive(Debug, Clone)]
pub(crate) struct ProcessTree {
    /// The command's pid, also its process group (it is started with `process_group(0)`).
    root: u32,
    /// `ORK_EXEC_ID=<value>` as it appears in `/proc/<pid>/environ`.
    marker: Vec<u8>,
    /// `pipe:[inode]` of the command's stdout and stderr pipes.
    pipes: Vec<PathBuf>,
}

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    pid: u32,
    state: char,
    ppid: u32,
    pgrp: u32,
    session: u32,
    /// Clock ticks after boot: with the pid, names the process even across pid reuse.
    start: u64,
}

/// A process that was stopped and will be killed.
#[derive(Debug)]
struct Member {
    start: u64,
    /// `None` where pidfds are not available (then the start time is checked before each signal).
    pidfd: Option<OwnedFd>,
}

impl ProcessTree {
    /// `marker_value` is the value given to [`MARKER_VAR`]; `pipe_fds` are ork's ends of the
    /// command's stdout and stderr pipes.
    pub(crate) fn new(root: u32, marker_value: &str, pipe_fds: &[i32]) -> ProcessTree {
        let pipes = pipe_fds
            .iter()
            .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
            .collect();
        ProcessTree {
            root,
            marker: format!("{MARKER_VAR}={marker_value}").into_bytes(),
            pipes,
        }
    }

    /// Stops every member as it is found, until a scan finds no new one, then kills them all.
    /// Returns the pids and start times of the processes killed.
    pub(crate) fn kill_all(&self) -> Vec<(u32, u64)> {
        let own = std::process::id();
        let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        let mut members: HashMap<u32, Member> = HashMap::new();
        let mut groups = HashSet::from([self.root]);
        let mut sessions = HashSet::new();
        for _ in 0..MAX_ROUNDS {
            let procs: Vec<Stat> = snapshot()
                .into_iter()
                .filter(|p| p.pid != own && p.pid > 1 && p.state != 'Z')
                .collect();
            let mut found: HashMap<u32, Stat> = procs
                .iter()
                .filter(|p| members.get(&p.pid).is_none_or(|m| m.start != p.start))
                .filter(|p| {
                    p.pid == self.root
                        || groups.contains(&p.pgrp)
                        || sessions.contains(&p.session)
                        || members.contains_key(&p.ppid)
                        || (same_owner(p.pid, uid)
                            && (self.has_marker(p.pid) || self.holds_pipe(p.pid)))
                })
                .map(|p| (p.pid, *p))
                .collect();
            // Close over parent links: children of what was just found belong too.
            loop {
                let more: Vec<Stat> = procs
                    .iter()
                    .filter(|p| found.contains_key(&p.ppid) && !found.contains_key(&p.pid))
                    .filter(|p| members.get(&p.pid).is_none_or(|m| m.start != p.start))
                    .copied()
                    .collect();
                if more.is_empty() {
                    break;
                }
                found.extend(more.into_iter().map(|p| (p.pid, p)));
            }
            if found.is_empty() {
                break;
            }
            for p in found.into_values() {
                if p.pgrp == p.pid {
                    groups.insert(p.pid);
                }
                if p.session == p.pid {
                    sessions.insert(p.pid);
                }
                let pidfd = open_pidfd(p);
                signal(p, pidfd.as_ref(), Signal::STOP);
                members.insert(
                    p.pid,
                    Member {
                        start: p.start,
                        pidfd,
                    },
                );
            }
        }
        members
            .into_iter()
            .map(|(pid, m)| {
                let stat = Stat {
                    pid,
                    state: 'S',
                    ppid: 0,
                    pgrp: 0,
                    session: 0,
                    start: m.start,
                };
                signal(stat, m.pidfd.as_ref(), Signal::KILL);
                (pid, m.start)
            })
            .collect()
    }

    fn has_marker(&self, pid: u32) -> bool {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
            env.split(|b| *b == 0)
                .any(|var| var == self.marker.as_slice())
        })
    }

    fn holds_pipe(&self, pid: u32) -> bool {
        if self.pipes.is_empty() {
            return false;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|target| self.pipes.contains(&target))
    }
}

/// Waits until none of `killed` is alive (gone, a zombie, or its pid reused), or `limit` passed.
/// Returns whether all are gone.
pub(crate) fn wait_gone(killed: &[(u32, u64)], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let alive = killed.iter().any(|&(pid, start)| {
            read_stat(pid).is_some_and(|s| s.start == start && s.state != 'Z')
        });
        if !alive {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn snapshot() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .collect()
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// `pid (comm) state ppid pgrp session … starttime(22nd) …`; `comm` may hold spaces and `)`.
fn parse_stat(pid: u32, text: &str) -> Option<Stat> {
    let after_comm = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    Some(Stat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn same_owner(pid: u32, uid: Option<u32>) -> bool {
    // Root reads every process; anyone else only their own (the rest cannot be signalled anyway).
    match uid {
        Some(0) => true,
        Some(uid) => std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == uid),
        None => false,
    }
}

fn to_pid(pid: u32) -> Option<Pid> {
    Pid::from_raw(i32::try_from(pid).ok()?)
}

/// A pidfd for `p`, checked to name the process scanned (same start time after opening).
fn open_pidfd(p: Stat) -> Option<OwnedFd> {
    let fd =
        rustix::process::pidfd_open(to_pid(p.pid)?, rustix::process::PidfdFlags::empty()).ok()?;
    read_stat(p.pid)
        .is_some_and(|now| now.start == p.start)
        .then_some(fd)
}

fn signal(p: Stat, pidfd: Option<&OwnedFd>, sig: Signal) {
    // A failure means the process is gone already (or is not ours to signal): nothing to do.
    match pidfd {
        Some(fd) => {
            let _ = rustix::process::pidfd_send_signal(fd, sig);
        }
        None => {
            if read_stat(p.pid).is_some_and(|now| now.start == p.start)
                && let Some(pid) = to_pid(p.pid)
            {
                let _ = rustix::process::kill_process(pid, sig);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_parentheses_and_spaces_in_the_name() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2";
        let s = parse_stat(4242, line).expect("parses");
        assert_eq!(
            (s.state, s.ppid, s.pgrp, s.session, s.start),
            ('S', 17, 4242, 4242, 987_654)
        );
        assert!(parse_stat(1, "1 (x) S 0").is_none());
    }

    #[test]
    fn this_process_is_visible_and_never_a_member() {
        let own = std::process::id();
        assert!(snapshot().iter().any(|p| p.pid == own));
        let tree = ProcessTree::new(own, "test-marker-never-set", &[]);
        assert!(!tree.has_marker(own));
    }
}
