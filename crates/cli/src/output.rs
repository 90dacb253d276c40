//! The CLI's output layer: everything a command prints on stdout goes through [`emit`], which
//! treats a closed pipe (`ork … | head`) as the reader being done, not as a crash.

use std::io::Write;

/// Writes `text` to stdout. A broken pipe ends the output quietly; other errors are reported.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("ork: cannot write output: {e}"),
    }
}

/// [`emit`] with `format!` arguments and a newline.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;
