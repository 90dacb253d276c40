//! `cargo xtask demo`: the example, end to end, on the local cluster.

use crate::Result;

pub fn run() -> Result<()> {
    crate::cluster::up()?;
    Ok(())
}
