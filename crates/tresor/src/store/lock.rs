//! One server per SQLite folder: `tresor serve` holds an exclusive lock on
//! `DATA/tresor.lock` for its whole life (released by the OS when the process
//! ends, even by SIGKILL), with its pid written inside, so that a second server
//! on the same folder stops at start and says who holds it. Operator commands
//! do not take it: they queue their writes on the database like any writer.

use anyhow::Context;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// Takes the lock of `data_dir` (created if missing), or says who holds it.
pub fn lock_data_dir(data_dir: &Path) -> anyhow::Result<DataDirLock> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create the data folder {}", data_dir.display()))?;
    let path = data_dir.join("tresor.lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            anyhow::bail!(
                "another tresor server (pid {}) already serves the data folder {}: \
                 one server per folder (stop it, or give this one another --data)",
                if holder.is_empty() { "unknown" } else { holder },
                data_dir.display()
            );
        }
        Err(std::fs::TryLockError::Error(error)) => {
            return Err(error).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", std::process::id())?;
    file.sync_all()?;
    Ok(DataDirLock { _file: file })
}
