//! PostgreSQL's wire protocol read as it passes through the [`super::proxy`]:
//! each side's messages framed (a type byte and a 4-byte big-endian length
//! that counts itself, after the client's untyped startup packet), counted
//! by type, and the client's round trips counted as the database sees them.
//!
//! A round trip is a flight of the client's messages: the client sends,
//! waits until the server has answered all it asked (a ReadyForQuery `'Z'`
//! for each Sync and simple Query), and only then sends again. What the
//! client pipelines (sends before the answers came back) is one flight
//! however many statements it holds; a client that waits for each answer
//! makes a flight of each. The order is causal: each side's bytes are read
//! here before they are forwarded, so an answer is seen only after what it
//! answers.
//!
//! A transaction is what the client sends from a simple-query `BEGIN` to a
//! simple-query `COMMIT` or `ROLLBACK` (not `ROLLBACK TO SAVEPOINT`): its
//! round trips are the flights that carry anything else.

use std::collections::BTreeMap;

/// The startup packet's protocol version 3.0, and the requests that come
/// before it in the same untyped shape.
const PROTOCOL_3: u32 = 196_608;
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// One connection as seen on the wire.
#[derive(Debug, Clone, Default)]
pub struct Conn {
    /// The startup packet's parameters (`user`, `database`, …).
    pub startup: Vec<(String, String)>,
    /// The client's messages by type (`'Q'` simple query, `'P'` Parse,
    /// `'B'` Bind, `'E'` Execute, `'S'` Sync, …).
    pub sent: BTreeMap<char, u64>,
    /// The server's messages by type (`'Z'` ReadyForQuery, `'C'`
    /// CommandComplete, …).
    pub answered: BTreeMap<char, u64>,
    /// The client's flights, the startup's included.
    pub round_trips: u64,
    /// The transactions ended, in order.
    pub transactions: Vec<Transaction>,
    /// Encrypted (the server took the client's TLS request): nothing past
    /// that point is read.
    pub opaque: bool,
    open: Option<Transaction>,
    /// The server sent something since the client's last message.
    answered_since: bool,
    /// Syncs and simple queries the server has not answered with a
    /// ReadyForQuery yet.
    outstanding: u64,
    /// The flight `open` last counted.
    counted_flight: Option<u64>,
    /// The client asked for TLS or GSS encryption: the server's next byte
    /// is its one-byte answer.
    encryption_asked: bool,
    client: Framing,
    server: Framing,
}

/// What one transaction cost on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transaction {
    /// Every flight from the one that carries `BEGIN` to the one that
    /// carries `COMMIT` or `ROLLBACK`, both included: the transaction's
    /// round trips as its client waits for them.
    pub flights: u64,
    /// Flights after `BEGIN`'s that carry more than the `COMMIT`.
    pub round_trips: u64,
    /// Of those, flights that run something (a Bind, an Execute or a simple
    /// query); the others only prepare statements (Parse and Describe).
    pub running: u64,
    /// Sync messages (one per pipelined extended-protocol statement).
    pub syncs: u64,
    /// Simple-query messages, `BEGIN` and its end left out.
    pub queries: u64,
    /// Execute messages: statements run with the extended protocol.
    pub executes: u64,
    /// `COMMIT` or `ROLLBACK`.
    pub end: String,
    /// This flight runs something (counted in `running` once).
    running_flight: bool,
    /// The flight `flights` last counted.
    last_flight: u64,
}

/// The bytes of one direction not yet framed into a whole message.
#[derive(Debug, Clone, Default)]
struct Framing {
    pending: Vec<u8>,
    /// The client's startup packet (or the server's first typed message)
    /// was read: every message from now on has a type byte.
    typed: bool,
}

impl Framing {
    /// The next whole message: `(type, payload)`; the type is `None` for
    /// the client's untyped packets.
    fn next(&mut self) -> Option<(Option<u8>, Vec<u8>)> {
        let header = if self.typed { 5 } else { 4 };
        if self.pending.len() < header {
            return None;
        }
        let at = header - 4;
        let length = u32::from_be_bytes(self.pending[at..at + 4].try_into().unwrap()) as usize;
        let whole = at + length;
        if length < 4 || self.pending.len() < whole {
            return None;
        }
        let kind = self.typed.then(|| self.pending[0]);
        let payload = self.pending[header..whole].to_vec();
        self.pending.drain(..whole);
        Some((kind, payload))
    }
}

impl Conn {
    /// Reads bytes the client sent, before they are forwarded.
    pub fn read_client(&mut self, bytes: &[u8]) {
        if self.opaque {
            return;
        }
        self.client.pending.extend_from_slice(bytes);
        while let Some((kind, payload)) = self.client.next() {
            match kind {
                None => self.untyped(&payload),
                Some(kind) => self.client_message(kind, &payload),
            }
        }
    }

    /// Reads bytes the server sent, before they are forwarded.
    pub fn read_server(&mut self, bytes: &[u8]) {
        if self.opaque || bytes.is_empty() {
            return;
        }
        self.answered_since = true;
        let mut bytes = bytes;
        if self.encryption_asked {
            self.encryption_asked = false;
            if matches!(bytes[0], b'S' | b'G') {
                self.opaque = true;
                return;
            }
            bytes = &bytes[1..];
        }
        self.server.typed = true;
        self.server.pending.extend_from_slice(bytes);
        while let Some((kind, _)) = self.server.next() {
            let kind = char::from(kind.expect("typed"));
            if kind == 'Z' {
                self.outstanding = self.outstanding.saturating_sub(1);
            }
            *self.answered.entry(kind).or_default() += 1;
        }
    }

    /// The client's startup packet, or a request before it.
    fn untyped(&mut self, payload: &[u8]) {
        self.flight();
        let code = u32::from_be_bytes(payload[..4].try_into().expect("a code"));
        match code {
            SSL_REQUEST | GSSENC_REQUEST => self.encryption_asked = true,
            PROTOCOL_3 => {
                self.client.typed = true;
                let texts: Vec<String> = payload[4..]
                    .split(|&b| b == 0)
                    .map(|text| String::from_utf8_lossy(text).into_owned())
                    .collect();
                self.startup = texts
                    .chunks_exact(2)
                    .filter(|pair| !pair[0].is_empty())
                    .map(|pair| (pair[0].clone(), pair[1].clone()))
                    .collect();
            }
            _ => {}
        }
    }

    /// Counts a flight when the client sends after the answers to all it
    /// asked.
    fn flight(&mut self) {
        if (self.answered_since && self.outstanding == 0) || self.round_trips == 0 {
            self.round_trips += 1;
            self.answered_since = false;
        }
    }

    fn client_message(&mut self, kind: u8, payload: &[u8]) {
        self.flight();
        let kind = char::from(kind);
        *self.sent.entry(kind).or_default() += 1;
        if matches!(kind, 'S' | 'Q') {
            self.outstanding += 1;
        }
        let flight = self.round_trips;
        if let Some(open) = self.open.as_mut()
            && open.last_flight != flight
        {
            open.last_flight = flight;
            open.flights += 1;
        }
        let query = (kind == 'Q').then(|| {
            let text = payload.strip_suffix(&[0]).unwrap_or(payload);
            String::from_utf8_lossy(text).trim().to_uppercase()
        });
        if let Some(query) = &query {
            if query.starts_with("BEGIN") || query.starts_with("START TRANSACTION") {
                self.open = Some(Transaction {
                    flights: 1,
                    last_flight: self.round_trips,
                    ..Transaction::default()
                });
                self.counted_flight = None;
                return;
            }
            let end = query.starts_with("COMMIT")
                || (query.starts_with("ROLLBACK") && !query.contains(" TO "));
            if end {
                if let Some(mut ended) = self.open.take() {
                    ended.end = query.clone();
                    self.transactions.push(ended);
                }
                return;
            }
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if self.counted_flight != Some(flight) {
            self.counted_flight = Some(flight);
            open.round_trips += 1;
            open.running_flight = false;
        }
        if matches!(kind, 'B' | 'E' | 'Q') && !open.running_flight {
            open.running_flight = true;
            open.running += 1;
        }
        match kind {
            'S' => open.syncs += 1,
            'Q' => open.queries += 1,
            'E' => open.executes += 1,
            _ => {}
        }
    }

    /// Messages of type `kind` the client sent.
    pub fn sent(&self, kind: char) -> u64 {
        self.sent.get(&kind).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&(payload.len() as u32 + 4).to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    fn startup() -> Vec<u8> {
        let mut payload = PROTOCOL_3.to_be_bytes().to_vec();
        payload.extend_from_slice(b"user\0postgres\0database\0d\0\0");
        let mut bytes = (payload.len() as u32 + 4).to_be_bytes().to_vec();
        bytes.extend_from_slice(&payload);
        bytes
    }

    /// Framing split anywhere, a pipelined flight and one flight per
    /// statement told apart, BEGIN and COMMIT left out of the count.
    #[test]
    fn flights_are_counted_as_the_client_waits() {
        let mut conn = Conn::default();
        let hello = startup();
        conn.read_client(&hello[..3]);
        conn.read_client(&hello[3..]);
        conn.read_server(&message(b'R', &[0, 0, 0, 0]));
        conn.read_server(&message(b'Z', b"I"));
        conn.read_client(&message(b'Q', b"BEGIN\0"));
        conn.read_server(&message(b'Z', b"T"));
        // Three statements pipelined: one flight, split mid-message, the
        // rest sent before the first statement was answered whole.
        let mut pipelined = Vec::new();
        for _ in 0..3 {
            for kind in [b'B', b'E', b'S'] {
                pipelined.extend(message(kind, b"xy"));
            }
        }
        conn.read_client(&pipelined[..25]);
        conn.read_server(&message(b'2', b""));
        conn.read_client(&pipelined[25..]);
        for _ in 0..3 {
            conn.read_server(&message(b'Z', b"T"));
        }
        // Two statements, each waited for: two flights.
        for _ in 0..2 {
            conn.read_client(&message(b'P', b"p"));
            conn.read_client(&message(b'S', b""));
            conn.read_server(&message(b'Z', b"T"));
        }
        conn.read_client(&message(b'Q', b"COMMIT\0"));
        conn.read_server(&message(b'Z', b"I"));
        assert_eq!(conn.startup[0], ("user".to_owned(), "postgres".to_owned()));
        assert_eq!(conn.round_trips, 6, "{conn:?}");
        assert_eq!(conn.sent('S'), 5);
        let transaction = &conn.transactions[0];
        assert_eq!(
            (
                transaction.round_trips,
                transaction.running,
                transaction.syncs
            ),
            (3, 1, 5),
            "{transaction:?}"
        );
        assert_eq!(transaction.executes, 3);
        assert_eq!(transaction.end, "COMMIT");
        assert_eq!(
            transaction.flights, 5,
            "BEGIN, three, COMMIT: {transaction:?}"
        );
    }

    /// `BEGIN` sent in front of statements is one flight with them.
    #[test]
    fn begin_in_front_of_statements_is_one_flight_with_them() {
        let mut conn = Conn::default();
        conn.read_client(&startup());
        conn.read_server(&message(b'Z', b"I"));
        let mut flight = message(b'Q', b"BEGIN\0");
        for kind in [b'B', b'E', b'S'] {
            flight.extend(message(kind, b"xy"));
        }
        conn.read_client(&flight);
        conn.read_server(&message(b'Z', b"T"));
        conn.read_server(&message(b'Z', b"T"));
        conn.read_client(&message(b'Q', b"COMMIT\0"));
        conn.read_server(&message(b'Z', b"I"));
        let transaction = &conn.transactions[0];
        assert_eq!(
            (
                transaction.flights,
                transaction.round_trips,
                transaction.running
            ),
            (2, 1, 1),
            "{transaction:?}"
        );
    }
}
