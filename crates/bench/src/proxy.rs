//! `--pg-delay-ms`: a TCP proxy between the spawned servers and PostgreSQL
//! that adds a fixed delay to every round trip, half on the way there and
//! half on the way back, so that round trips (and locks held across them)
//! cost on one machine what they cost on a network.
//!
//! Each chunk read is written out once its delay has passed, in order; a
//! connection's chunks still flow back to back (a pipeline is delayed once,
//! not once per chunk), as on a real link. The delay is kept by threads
//! sleeping with the operating system's timers: tokio's timer has
//! millisecond steps, which would round half a millisecond up to one or two.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A proxy listening on 127.0.0.1 in front of `upstream`; it stops taking
/// connections when dropped (those open end with their ends).
#[derive(Debug)]
pub(crate) struct DelayProxy {
    pub(crate) address: SocketAddr,
    stopped: Arc<AtomicBool>,
}

impl DelayProxy {
    /// Starts the proxy: each connection to it is one to `upstream` whose
    /// round trips take `round_trip` more.
    pub(crate) fn start(upstream: SocketAddr, round_trip: Duration) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = stopped.clone();
        let one_way = round_trip / 2;
        std::thread::Builder::new()
            .name("bench-pg-proxy".to_owned())
            .spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(upstream) else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    if let Err(error) = relay(client, server, one_way) {
                        tracing::warn!(%error, "the delay proxy cannot relay a connection");
                    }
                }
            })?;
        Ok(DelayProxy { address, stopped })
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// Relays both directions of one connection, each delayed by `one_way`.
fn relay(client: TcpStream, server: TcpStream, one_way: Duration) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    delayed(client.try_clone()?, server.try_clone()?, one_way)?;
    delayed(server, client, one_way)
}

/// Copies what `from` sends to `to`, each chunk `delay` after it was read:
/// one thread reads and stamps, another waits for each stamp and writes.
fn delayed(mut from: TcpStream, mut to: TcpStream, delay: Duration) -> std::io::Result<()> {
    let (chunks, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::Builder::new()
        .name("bench-pg-read".to_owned())
        .spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let at = Instant::now() + delay;
                        if chunks.send((at, buffer[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
            // The writer ends once what was read is written.
        })?;
    std::thread::Builder::new()
        .name("bench-pg-write".to_owned())
        .spawn(move || {
            for (at, chunk) in due {
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                if to.write_all(&chunk).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(Shutdown::Write);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on 127.0.0.1: what it reads, it writes back.
    fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let address = listener.local_addr().expect("an address");
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buffer) {
                        if n == 0 || stream.write_all(&buffer[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        address
    }

    /// The quickest of `rounds` round trips of one byte through `address`.
    fn fastest_round_trip(address: SocketAddr, rounds: usize) -> Duration {
        let mut stream = TcpStream::connect(address).expect("the proxy answers");
        stream.set_nodelay(true).expect("nodelay");
        let mut fastest = Duration::MAX;
        for round in 0..rounds {
            let started = Instant::now();
            stream.write_all(&[round as u8]).expect("a write");
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).expect("the echo");
            assert_eq!(byte[0], round as u8, "the bytes come back in order");
            fastest = fastest.min(started.elapsed());
        }
        fastest
    }

    #[test]
    fn a_round_trip_through_the_proxy_takes_at_least_its_delay() {
        let upstream = echo();
        for delay_us in [1_000, 5_000] {
            let delay = Duration::from_micros(delay_us);
            let proxy = DelayProxy::start(upstream, delay).expect("the proxy starts");
            let fastest = fastest_round_trip(proxy.address, 20);
            assert!(
                fastest >= delay,
                "a round trip took {fastest:?}, under the {delay:?} added"
            );
            // And not much more than it, on a machine that is not swamped.
            assert!(
                fastest < delay + Duration::from_millis(20),
                "a round trip took {fastest:?} for {delay:?} added"
            );
        }
    }

    #[test]
    fn a_pipeline_of_chunks_is_delayed_once_not_once_per_chunk() {
        // A round trip long beside a busy machine's scheduling delays (CI
        // runs this beside other tests): once is 100 ms, ten times 1 s.
        let proxy =
            DelayProxy::start(echo(), Duration::from_millis(100)).expect("the proxy starts");
        let mut stream = TcpStream::connect(proxy.address).expect("the proxy answers");
        stream.set_nodelay(true).expect("nodelay");
        let started = Instant::now();
        // Ten chunks sent at once, 1 ms apart, come back about one round
        // trip after the last was sent (not ten round trips: 1 s).
        for round in 0..10u8 {
            stream.write_all(&[round]).expect("a write");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut back = [0u8; 10];
        stream.read_exact(&mut back).expect("the echoes");
        assert_eq!(back, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_millis(500),
            "ten pipelined chunks took {took:?} through 100 ms of round trip"
        );
    }
}
