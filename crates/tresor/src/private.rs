//! Folders only the server's user writes, and files made new in them: the
//! mail outbox (`mail.rs`) and the kept checkpoints (`backup/keeper.rs`).
//!
//! A private folder is no symbolic link, belongs to the server's user and is
//! writable by nobody else: whoever could write in it could plant a link
//! where the server is about to write, and have it write through the link
//! into any file of that user's (issue 42: a copy of the secrets key). A
//! file is made there new (`O_CREAT | O_EXCL` with `O_NOFOLLOW`: never
//! through a link, never over a file), 0600, under a random name, then
//! renamed into place whole.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Error, ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// What becomes of a folder of the user's own that others may enter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loose {
    /// Made 0700: a folder the server has for itself (the mail outbox).
    Tighten,
    /// Refused when its group or others may write in it: a folder the
    /// operator names and may share with other files (the log key's), not
    /// changed behind their back.
    Refuse,
}

/// Makes `dir` a private folder: created 0700 (its parents as usual) if
/// missing, else checked ([`check`]).
pub fn folder(dir: &Path, loose: Loose) -> std::io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    check(dir, loose)
}

/// Checks that `dir` is a folder (not a symbolic link) of this process's
/// user that nobody else may write in; one too open is made 0700 or
/// refused as `loose` says. The error says why, for the operator.
pub fn check(dir: &Path, loose: Loose) -> std::io::Result<()> {
    let found = std::fs::symlink_metadata(dir)?;
    if !found.file_type().is_dir() {
        return Err(Error::other(
            "not a folder (a symbolic link or a file is refused): name a folder of this user's",
        ));
    }
    let mine = rustix::process::geteuid().as_raw();
    if found.uid() != mine {
        return Err(Error::other(format!(
            "the folder belongs to another user (uid {}, this server runs as uid {mine}): \
             whoever owns it could read what is written there or plant links in it; name a \
             folder of this user's",
            found.uid()
        )));
    }
    let mode = found.mode() & 0o777;
    match loose {
        Loose::Tighten if mode & 0o077 != 0 => {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Loose::Refuse if mode & 0o022 != 0 => Err(Error::other(format!(
            "the folder is writable by its group or by others (mode {mode:03o}): they could \
             plant links where the server writes; `chmod go-w` it, or name a folder only this \
             user writes"
        ))),
        _ => Ok(()),
    }
}

/// 128 random bits, in a UUID's spelling.
pub fn random_name() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random generator works");
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Creates the file `path`, 0600: new (an existing file or link there is
/// an error), never through a symbolic link.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes a key file: `line` and a newline to the new file `path`, 0600
/// (an existing file there is an error), its folder made if missing, synced.
pub fn write_key_file(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let mut file = options.open(path)?;
    writeln!(file, "{line}")?;
    file.sync_all()
}

/// Writes `bytes` as `dir/name`, replacing what was there: first into a
/// new file under a hidden random name ([`create_new`]), synced when
/// `sync`, then renamed, so that a reader sees the old file or the new
/// one whole, and nothing is ever written through a link.
pub fn write_whole(dir: &Path, name: &OsStr, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let mut hidden = OsString::from(".");
    hidden.push(name);
    hidden.push(format!(".{}.partial", random_name()));
    let partial = dir.join(hidden);
    let written = create_new(&partial).and_then(|mut file| {
        file.write_all(bytes)?;
        if sync { file.sync_all() } else { Ok(()) }
    });
    let renamed = written.and_then(|()| std::fs::rename(&partial, dir.join(name)));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    renamed
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A file's permission bits (the mail's tests read them too).
    pub(crate) fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_loose_folder_is_tightened_or_refused_and_a_link_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let made = root.path().join("a/b/made");
        folder(&made, Loose::Refuse).unwrap();
        assert_eq!(mode(&made), 0o700);
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        for loose_mode in [0o770, 0o703, 0o757] {
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(loose_mode)).unwrap();
            let error = check(&open, Loose::Refuse).unwrap_err().to_string();
            assert!(
                error.contains("writable by its group or by others"),
                "{error}"
            );
            assert_eq!(mode(&open), loose_mode, "refused, not changed");
        }
        // Readable by others but written by this user alone: taken as is.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        check(&open, Loose::Refuse).unwrap();
        folder(&open, Loose::Tighten).unwrap();
        assert_eq!(mode(&open), 0o700);
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        for loose in [Loose::Refuse, Loose::Tighten] {
            let error = folder(&link, loose).unwrap_err().to_string();
            assert!(error.contains("symbolic link"), "{error}");
        }
    }

    #[test]
    fn a_file_is_never_made_through_a_link_nor_over_a_file() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        std::fs::write(&victim, "kept").unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(create_new(&link).is_err());
        assert!(create_new(&victim).is_err());
        // A dangling link is not followed to make its target either.
        let dangling = root.path().join("dangling");
        std::os::unix::fs::symlink(root.path().join("target"), &dangling).unwrap();
        assert!(create_new(&dangling).is_err());
        assert!(!root.path().join("target").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept");
        // Replaced whole, 0600, nothing left beside.
        write_whole(root.path(), "out".as_ref(), b"first", true).unwrap();
        write_whole(root.path(), "out".as_ref(), b"second", false).unwrap();
        let out = root.path().join("out");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "second");
        assert_eq!(mode(&out), 0o600);
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 4);
    }
}
