//! A TCP proxy between the server and PostgreSQL that can cut a connection
//! at its COMMIT: right after forwarding it (the database commits, the
//! answer is lost) or instead of forwarding it (the database rolls back).
//! It is how the tests make a COMMIT's outcome unknown for real. [`Plug`]
//! cuts every connection at once and refuses new ones until plugged back:
//! a database out of reach.
//!
//! The proxy also reads what passes ([`super::wire`]): each connection's
//! messages and round trips, counted on the wire ([`Proxy::connections`]).

use super::wire::Conn;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Where the next COMMIT is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Forward the COMMIT, then close both sides before its answer.
    AfterCommit = 1,
    /// Close both sides instead of forwarding the COMMIT.
    BeforeCommit = 2,
}

/// A proxy listening on 127.0.0.1:`port` in front of `upstream`.
#[derive(Debug)]
pub struct Proxy {
    pub port: u16,
    armed: Arc<AtomicU8>,
    /// COMMITs to let through, once armed, before the one cut.
    skip: Arc<AtomicUsize>,
    cuts: Arc<AtomicUsize>,
    /// Every connection made through it, as read on the wire.
    conns: Arc<Mutex<Vec<Arc<Mutex<Conn>>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// The simple-query message of a COMMIT ('Q', then the text and a NUL).
const COMMIT: &[u8] = b"COMMIT\0";

impl Proxy {
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let armed = Arc::new(AtomicU8::new(0));
        let skip = Arc::new(AtomicUsize::new(0));
        let cuts = Arc::new(AtomicUsize::new(0));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let (armed_in, skip_in, cuts_in) = (armed.clone(), skip.clone(), cuts.clone());
        let conns_in = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let conn = Arc::new(Mutex::new(Conn::default()));
                conns_in.lock().unwrap().push(conn.clone());
                tokio::spawn(pump(
                    (client, server),
                    conn,
                    armed_in.clone(),
                    skip_in.clone(),
                    cuts_in.clone(),
                ));
            }
        });
        Proxy {
            port,
            armed,
            skip,
            cuts,
            conns,
            accept,
        }
    }

    /// Cuts the next COMMIT that passes, once.
    pub fn arm(&self, cut: Cut) {
        self.arm_after(cut, 0);
    }

    /// Lets `skip` COMMITs pass, then cuts the next one, once: for a COMMIT
    /// queued behind others (a batch behind the one holding the writer).
    pub fn arm_after(&self, cut: Cut, skip: usize) {
        self.skip.store(skip, Ordering::SeqCst);
        self.armed.store(cut as u8, Ordering::SeqCst);
    }

    /// How many connections were cut.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }

    /// Every connection made through the proxy so far, in the order they
    /// were made, as read on the wire until now.
    pub fn connections(&self) -> Vec<Conn> {
        let conns = self.conns.lock().unwrap();
        conns
            .iter()
            .map(|conn| conn.lock().unwrap().clone())
            .collect()
    }
}

async fn pump(
    (client, server): (TcpStream, TcpStream),
    conn: Arc<Mutex<Conn>>,
    armed: Arc<AtomicU8>,
    skip: Arc<AtomicUsize>,
    cuts: Arc<AtomicUsize>,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set when a COMMIT was forwarded to be cut after: the answers are then
    // read and dropped until the database has answered the COMMIT.
    let swallow = Arc::new(tokio::sync::Notify::new());
    let swallowing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (swallow_in, swallowing_in) = (swallow.clone(), swallowing.clone());
    let conn_in = conn.clone();
    let answers = tokio::spawn(async move {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let Some(chunk) = next_chunk(&mut server_read, &mut buffer).await else {
                break;
            };
            if swallowing_in.load(Ordering::SeqCst) {
                if chunk.windows(COMMIT.len()).any(|w| w == COMMIT) {
                    swallow_in.notify_one();
                    break;
                }
                continue;
            }
            conn_in.lock().unwrap().read_server(chunk);
            if client_write.write_all(chunk).await.is_err() {
                break;
            }
        }
    });
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let Some(chunk) = next_chunk(&mut client_read, &mut buffer).await else {
            break;
        };
        let cut = armed.load(Ordering::SeqCst);
        if cut != 0
            && chunk.windows(COMMIT.len()).any(|w| w == COMMIT)
            && skip
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| s.checked_sub(1))
                .is_err()
            && armed
                .compare_exchange(cut, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            if cut == Cut::AfterCommit as u8 {
                // The database commits and answers; the answer is dropped.
                swallowing.store(true, Ordering::SeqCst);
                let _ = server_write.write_all(chunk).await;
                let _ = server_write.flush().await;
                let _ =
                    tokio::time::timeout(std::time::Duration::from_secs(10), swallow.notified())
                        .await;
            }
            cuts.fetch_add(1, Ordering::SeqCst);
            // Both sides closed: the server never gets an answer.
            answers.abort();
            let _ = server_write.shutdown().await;
            return;
        }
        conn.lock().unwrap().read_client(chunk);
        if server_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    answers.abort();
}

/// A TCP proxy in front of PostgreSQL that can be unplugged (every
/// connection cut, new ones closed at once) and plugged back.
#[derive(Debug)]
pub struct Plug {
    pub port: u16,
    up: Arc<AtomicBool>,
    pumps: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Plug {
    pub async fn start(upstream: &str) -> Plug {
        let upstream = upstream.to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let pumps = Arc::new(Mutex::new(Vec::<JoinHandle<()>>::new()));
        let (up_in, pumps_in) = (up.clone(), pumps.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !up_in.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let Ok(mut server) = TcpStream::connect(upstream.as_str()).await else {
                    continue;
                };
                let pump = tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                pumps_in.lock().unwrap().push(pump);
            }
        });
        Plug {
            port,
            up,
            pumps,
            accept,
        }
    }

    /// Cuts every connection and refuses new ones; returns once each cut
    /// connection is closed, so that what is asked next meets the cut.
    pub async fn unplug(&self) {
        let pumps = self.cut();
        for pump in pumps {
            let _ = pump.await;
        }
    }

    fn cut(&self) -> Vec<JoinHandle<()>> {
        self.up.store(false, Ordering::SeqCst);
        let pumps: Vec<_> = self.pumps.lock().unwrap().drain(..).collect();
        for pump in &pumps {
            pump.abort();
        }
        pumps
    }

    pub fn plug(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for Plug {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// The next bytes `reader` sends, or `None` once it is closed or fails.
async fn next_chunk<'b>(
    reader: &mut (impl tokio::io::AsyncRead + Unpin),
    buffer: &'b mut [u8],
) -> Option<&'b [u8]> {
    match reader.read(buffer).await {
        Ok(0) | Err(_) => None,
        Ok(read) => Some(&buffer[..read]),
    }
}
