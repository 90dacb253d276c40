//! A problem found in a Katalog: where it is (file, line, field path), what is wrong, a hint.

use std::fmt;
use std::path::PathBuf;

/// One thing wrong with a Katalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// Dot path of the field (`spec.crds.web.operatorBox.reconcile.remote.timeout`).
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if self.path.is_empty() {
            write!(f, ": {}", self.message)?;
        } else {
            write!(f, ": {}: {}", self.path, self.message)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n    hint: {hint}")?;
        }
        Ok(())
    }
}

/// Every problem found in one load; a Katalog with any is not used.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}
