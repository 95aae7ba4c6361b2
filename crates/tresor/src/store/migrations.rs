//! The schema's migrations: one SQL file each under `migrations/sqlite` and
//! `migrations/postgres`, embedded in the binary and read as sqlx's
//! `migrate!` reads them (version, description, checksum), so that a
//! database migrated by an earlier build is recognised. Listed here rather
//! than by `migrate!`, whose macros make a clean build compile sqlx and both
//! of its database drivers (SQLite's C source included) a second time, for
//! the compiler (BENCHMARKS.md, "The test suite"); a test checks that the
//! lists are the folders' files.

use super::Backend;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use std::borrow::Cow;
use std::sync::LazyLock;

/// `(file name, text)` of each file of `migrations/<folder>`.
macro_rules! files {
    ($folder:literal: $($file:literal)*) => {
        &[$(($file, include_str!(concat!("../../migrations/", $folder, "/", $file)))),*]
    };
}

/// The files of both folders (each folder's own text of each), as
/// `(SQLite's, PostgreSQL's)`.
macro_rules! both {
    ($($file:literal)*) => {
        (files!("sqlite": $($file)*), files!("postgres": $($file)*))
    };
}

type Files = &'static [(&'static str, &'static str)];

const BOTH: (Files, Files) = both!(
    "0001_init.sql"
    "0002_trail.sql"
    "0003_protect.sql"
    "0004_plays_in_progress_by_player.sql"
    "0006_sealed_secrets.sql"
    "0007_username_skeletons.sql"
    "0008_accounts.sql"
    "0009_staff.sql"
    "0010_identity.sql"
    "0012_installation.sql"
    "0013_tlog.sql"
    "0014_account_care.sql"
    "0015_documents.sql"
    "0016_writer_accounts.sql"
    "0017_purchase_keys.sql"
    "0018_account_guard.sql"
    "0020_cosignatures.sql"
    "0021_entries.sql"
    "0022_entries.sql"
    "0023_games.sql"
    "0024_email_undo_state.sql"
    "0025_log_key_ends.sql"
    "0026_report_rollup.sql"
);

/// PostgreSQL's alone: the writers' batch records (how a writer finds out
/// whether a COMMIT whose answer was lost took effect), and the ledger's
/// transfers without foreign keys (the batch checks their accounts).
const POSTGRES_ONLY: Files = files!("postgres":
    "0005_writer_batches.sql"
    "0027_transfers_accounts_checked_by_the_writer.sql"
);

/// The files of `backend`'s folder.
fn files(backend: Backend) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    let lists: &[Files] = match backend {
        Backend::Sqlite => &[BOTH.0],
        Backend::Postgres => &[BOTH.1, POSTGRES_ONLY],
    };
    lists.iter().flat_map(|files| files.iter())
}

/// The migrations of `backend`'s schema, in order.
pub fn migrator(backend: Backend) -> &'static Migrator {
    static SQLITE_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator_of(Backend::Sqlite));
    static POSTGRES_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator_of(Backend::Postgres));
    match backend {
        Backend::Sqlite => &SQLITE_MIGRATOR,
        Backend::Postgres => &POSTGRES_MIGRATOR,
    }
}

fn migrator_of(backend: Backend) -> Migrator {
    let mut migrations: Vec<Migration> = files(backend)
        .map(|&(name, sql)| migration(name, sql))
        .collect();
    migrations.sort_by_key(|m| m.version);
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

/// A file `<version>_<description>.sql` as sqlx reads it: the description
/// with its underscores as spaces, the checksum the SHA-384 of the text,
/// no transaction if the text starts with `-- no-transaction`.
fn migration(name: &str, sql: &'static str) -> Migration {
    let (version, rest) = name
        .split_once('_')
        .expect("a migration is named VERSION_DESCRIPTION.sql");
    let kind = MigrationType::from_filename(rest);
    let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
    Migration::new(
        version.parse().expect("a migration's version is a number"),
        Cow::Owned(description),
        kind,
        Cow::Borrowed(sql),
        sql.starts_with("-- no-transaction"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of both folders is listed, and nothing else.
    #[test]
    fn the_lists_are_the_folders_files() {
        for (folder, backend) in [("sqlite", Backend::Sqlite), ("postgres", Backend::Postgres)] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(folder);
            let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".sql"))
                .collect();
            on_disk.sort();
            let mut listed: Vec<&str> = files(backend).map(|&(name, _)| name).collect();
            listed.sort();
            assert_eq!(listed, on_disk, "migrations/{folder}");
        }
    }

    /// Read as sqlx's `migrate!` read them: 0001 is "init", with the
    /// SHA-384 of its text, in a transaction.
    #[test]
    fn a_migration_is_read_as_sqlx_reads_it() {
        let first = &migrator(Backend::Sqlite).migrations[0];
        assert_eq!(first.version, 1);
        assert_eq!(first.description, "init");
        assert_eq!(first.migration_type, MigrationType::Simple);
        assert!(!first.no_tx);
        assert_eq!(first.checksum.len(), 48);
        let plays = migrator(Backend::Postgres)
            .migrations
            .iter()
            .find(|m| m.version == 4)
            .unwrap();
        assert_eq!(plays.description, "plays in progress by player");
    }
}
