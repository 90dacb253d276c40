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

/// Writes `contents` to `path` readable by its owner only (0600), whatever the umask, for files
/// that may hold what the CR's readers may not see (a recorded exchange); an existing file is
/// narrowed to 0600 before it is rewritten, and a symbolic link at `path` is refused, not
/// followed.
pub(crate) fn write_private(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.set_len(0)?;
    file.write_all(contents)
}
