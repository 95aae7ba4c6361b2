//! Open files (issue 32, finding 6): at start the soft limit on open files
//! is raised to the hard one, as Go's runtime does (a soft limit of 1,024
//! is the usual default, far under what a server holds), and the listeners'
//! connection caps are sized under what is then available, keeping
//! descriptors in reserve for the database pool, the files the server
//! writes and the operator's listener: players holding every connection
//! they are allowed can never starve `/healthz`, the console or the
//! database. See docs/RELIABILITY.md, "Open files".

use crate::http::EdgeSettings;
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors kept out of the listeners' caps: the database pool and the
/// SQLite readers (a file, its WAL and its shared memory each), the writer,
/// the data folder's lock, logs, mail, the continuous copy's pipes.
pub const RESERVED: u64 = 128;

/// The soft limit after [`raise`], and what it was before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub before: u64,
    pub now: u64,
}

/// The soft limit on open files now (`u64::MAX`: none).
pub fn soft_limit() -> u64 {
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Raises the soft limit on open files to the hard one. `u64::MAX` stands
/// for no limit.
pub fn raise() -> std::io::Result<OpenFiles> {
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current.unwrap_or(u64::MAX);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if before >= hard {
        return Ok(OpenFiles {
            before,
            now: before,
        });
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )?;
    Ok(OpenFiles { before, now: hard })
}

/// The caps sized under `limit` open files: the operator's listener gets at
/// most a quarter of what is left after [`RESERVED`], the players' listener
/// the rest; caps already under that are kept. Returns the caps and, when
/// one was lowered, a sentence saying so; an error when `limit` leaves no
/// room for a connection.
pub fn size_caps(edge: EdgeSettings, limit: u64) -> Result<(EdgeSettings, Option<String>), String> {
    let room = limit.saturating_sub(RESERVED);
    if room < 8 {
        return Err(format!(
            "the process may open only {limit} files, {RESERVED} of which are kept for the \
             database and the server's files: raise its limit (ulimit -n, systemd's LimitNOFILE)"
        ));
    }
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    let mut sized = edge;
    sized.operator.total = edge.operator.total.min(room / 4);
    sized.players.total = edge.players.total.min(room - sized.operator.total);
    sized.operator.per_address = sized.operator.per_address.min(sized.operator.total);
    sized.players.per_address = sized.players.per_address.min(sized.players.total);
    let note = (sized != edge).then(|| {
        format!(
            "connection caps lowered to fit {limit} open files ({RESERVED} kept for the \
             database and files): players {} (from {}), operator {} (from {})",
            sized.players.total, edge.players.total, sized.operator.total, edge.operator.total
        )
    });
    Ok((sized, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_under_the_limit_are_kept() {
        let edge = EdgeSettings::default();
        assert_eq!(size_caps(edge, 65_536), Ok((edge, None)));
    }

    #[test]
    fn caps_over_the_limit_are_lowered_with_the_reserve_kept() {
        let (sized, note) = size_caps(EdgeSettings::default(), 1024).expect("room");
        assert_eq!(sized.operator.total, 224);
        assert_eq!(sized.players.total, 672);
        assert!(sized.players.total + sized.operator.total + RESERVED as usize <= 1024);
        assert!(note.expect("said").contains("players 672 (from 4096)"));
    }

    #[test]
    fn no_room_is_refused() {
        assert!(size_caps(EdgeSettings::default(), 100).is_err());
    }
}
