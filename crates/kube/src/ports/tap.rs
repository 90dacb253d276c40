//! `--record DIR` / `--replay DIR`: each call's request and answer saved as `NNNN.json`, or
//! answered from those files instead of the service (for the service repository's own CI).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::transport::{CallFailed, ReplayError, Transport};

enum Mode {
    /// Calls go to the service and are saved.
    Record(Box<dyn Transport>),
    /// Calls are answered from the saved files.
    Replay,
}

/// A transport layer that records calls to a folder, or replays them from it.
pub(crate) struct Tap {
    mode: Mode,
    dir: PathBuf,
    seq: AtomicUsize,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tap({})", self.dir.display())
    }
}

impl Transport for Tap {
    fn call<'a>(
        &'a self,
        cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
        Box::pin(async move {
            match &self.mode {
                Mode::Replay => Ok(self.answer(&body)?),
                Mode::Record(inner) => {
                    let answer = inner.call(cr, body.clone()).await;
                    self.keep(&body, answer.as_ref());
                    answer
                }
            }
        })
    }

    fn inner(&self) -> Option<&dyn Transport> {
        match &self.mode {
            Mode::Record(inner) => Some(inner.as_ref()),
            Mode::Replay => None,
        }
    }
}

impl Tap {
    /// Records every call `inner` makes into `dir`.
    ///
    /// # Errors
    /// The folder cannot be created.
    pub fn record(dir: PathBuf, inner: Box<dyn Transport>) -> std::io::Result<Tap> {
        std::fs::create_dir_all(&dir)?;
        Ok(Tap {
            mode: Mode::Record(inner),
            dir,
            seq: AtomicUsize::new(0),
        })
    }

    pub fn replay(dir: PathBuf) -> Tap {
        Tap {
            mode: Mode::Replay,
            dir,
            seq: AtomicUsize::new(0),
        }
    }

    fn next_file(&self) -> (usize, PathBuf) {
        let n = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        (n, self.dir.join(format!("{n:04}.json")))
    }

    /// The recorded answer to this request (in call order).
    fn answer(&self, request: &[u8]) -> Result<Vec<u8>, ReplayError> {
        let (n, file) = self.next_file();
        let shown = file.display().to_string();
        if n > 1 && !file.exists() && self.dir.join(format!("{:04}.json", n - 1)).exists() {
            // Not a missing file: every exchange there is was replayed.
            return Err(ReplayError::Exhausted { recorded: n - 1 });
        }
        let text = std::fs::read_to_string(&file).map_err(|e| ReplayError::Missing {
            file: shown.clone(),
            reason: e.to_string(),
        })?;
        let saved: Value = serde_json::from_str(&text).map_err(|e| ReplayError::Unreadable {
            file: shown.clone(),
            reason: e.to_string(),
        })?;
        let key_now = serde_json::from_slice::<Value>(request)
            .ok()
            .and_then(|r| r["key"].as_str().map(str::to_string))
            .unwrap_or_default();
        let key_then = saved["request"]["key"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if key_now != key_then {
            return Err(ReplayError::OtherKey {
                file: shown,
                then: key_then,
                now: key_now,
            });
        }
        if let Some(error) = saved["error"].as_str() {
            // A record saved from a CR's condition (`ork explain --save`) carries the prefix
            // the replayed failure gets again.
            let error = error.strip_prefix("remote reconciler: ").unwrap_or(error);
            return Err(ReplayError::Recorded(error.to_string()));
        }
        Ok(match &saved["response"] {
            Value::String(raw) => raw.clone().into_bytes(),
            other => other.to_string().into_bytes(),
        })
    }

    /// Saves the request and what came back.
    fn keep(&self, request: &[u8], answer: Result<&Vec<u8>, &CallFailed>) {
        // A Secret's values are not written to disk (a child's, an input's).
        let mut request: Value = serde_json::from_slice(request).unwrap_or(Value::Null);
        crate::redact::redact_secrets(&mut request);
        let entry = match answer {
            Ok(body) => match serde_json::from_slice::<Value>(body) {
                Ok(v) => json!({"request": request, "response": v}),
                Err(_) => json!({"request": request, "response": String::from_utf8_lossy(body)}),
            },
            Err(e) => json!({"request": request, "error": e.to_string()}),
        };
        let (_, file) = self.next_file();
        if let Err(e) = std::fs::write(
            &file,
            serde_json::to_string_pretty(&entry).unwrap_or_default(),
        ) {
            tracing::warn!(file = %file.display(), error = %e, "cannot record the call");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46 (6): an exchange saved by `ork explain --save` replayed with a doubled
    /// `remote reconciler:` prefix, and the retry of cycle 2 failed on "No such file".
    #[test]
    fn a_saved_failure_replays_as_it_was_and_the_recording_then_ends() {
        let dir = std::env::temp_dir().join(format!("ork-tap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let saved = json!({"request": {"key": "ns/web"},
            "error": "remote reconciler: POST http://127.0.0.1:1/r: unexpected status 500"});
        std::fs::write(dir.join("0001.json"), saved.to_string()).expect("write");
        let tap = Tap::replay(dir.clone());
        let request = json!({"key": "ns/web"}).to_string().into_bytes();
        match tap.answer(&request) {
            Err(ReplayError::Recorded(e)) => {
                assert_eq!(e, "POST http://127.0.0.1:1/r: unexpected status 500");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            tap.answer(&request),
            Err(ReplayError::Exhausted { recorded: 1 })
        ));
        let _ = std::fs::remove_dir_all(&dir);
        // An empty folder is a missing recording, not an ended one.
        let empty = Tap::replay(dir);
        assert!(matches!(
            empty.answer(&request),
            Err(ReplayError::Missing { .. })
        ));
    }
}
