//! Connections, one by one (hyper's HTTP/1 through hyper-util, where
//! `axum::serve` held any connection for ever): a connection that does not
//! finish its request's headers in time is closed (`header_read_timeout`),
//! and so is one where no byte has moved either way for a while and no
//! request is being answered (`idle`);
//! each listener admits so many connections in all and so many per client
//! address, and closes the ones over either cap at once, before reading a
//! byte. The operator's listener has caps of its own, so that players (or
//! someone posing as many) exhausting theirs never reach `/healthz`,
//! `/metrics` or the console. See docs/RELIABILITY.md (hostile input).

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tower::ServiceExt;

/// How many connections one listener admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionCaps {
    /// In all; keep it under the process's open files (`ulimit -n`).
    pub total: usize,
    /// From one client address (behind a reverse proxy, the proxy's).
    pub per_address: usize,
}

/// The connection limits of both listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeSettings {
    /// From when the server waits for a request (a new connection, or a
    /// kept-alive one between requests) to the end of its headers.
    pub header_read_timeout: Duration,
    /// No byte read or written for this long, and no request being
    /// answered: the connection is closed.
    pub idle_timeout: Duration,
    pub players: ConnectionCaps,
    pub operator: ConnectionCaps,
}

impl Default for EdgeSettings {
    fn default() -> Self {
        EdgeSettings {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            players: ConnectionCaps {
                total: 4096,
                per_address: 256,
            },
            operator: ConnectionCaps {
                total: 256,
                per_address: 64,
            },
        }
    }
}

/// The connections a listener holds, in all and by address.
#[derive(Debug)]
struct Caps {
    total: Arc<Semaphore>,
    per_address: usize,
    by_address: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection: its place is given back when dropped.
struct Admitted {
    caps: Arc<Caps>,
    address: IpAddr,
    _permit: OwnedSemaphorePermit,
}

impl Caps {
    fn new(caps: ConnectionCaps) -> Arc<Caps> {
        Arc::new(Caps {
            total: Arc::new(Semaphore::new(caps.total.min(Semaphore::MAX_PERMITS))),
            per_address: caps.per_address,
            by_address: Mutex::new(HashMap::new()),
        })
    }

    /// A place for a connection from `address`, or `None` over a cap.
    fn admit(self: &Arc<Self>, address: IpAddr) -> Option<Admitted> {
        let permit = self.total.clone().try_acquire_owned().ok()?;
        let mut by_address = self.by_address.lock().expect("never poisoned");
        let held = by_address.entry(address).or_insert(0);
        if *held >= self.per_address {
            if *held == 0 {
                by_address.remove(&address);
            }
            return None;
        }
        *held += 1;
        Some(Admitted {
            caps: self.clone(),
            address,
            _permit: permit,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut by_address = self.caps.by_address.lock().expect("never poisoned");
        if let Some(held) = by_address.get_mut(&self.address) {
            *held -= 1;
            if *held == 0 {
                by_address.remove(&self.address);
            }
        }
    }
}

/// Serves `router` on `listener` until `stop` turns true, then lets the
/// connections end their requests (idle ones are closed) and returns when
/// the last is gone.
pub async fn serve_listener(
    listener: TcpListener,
    router: Router,
    settings: EdgeSettings,
    caps: ConnectionCaps,
    mut stop: watch::Receiver<bool>,
) {
    let caps = Caps::new(caps);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_read_timeout)
        .keep_alive(true);
    // Each connection holds a receiver; the sender's `closed` is when all are gone.
    let (live, live_rx) = watch::channel(());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: wait a little rather
                    // than spin, and take the next one.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        let Some(admitted) = caps.admit(peer.ip()) else {
            // Over a cap: closed at once, before a byte is read.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let builder = builder.clone();
        let stop = stop.clone();
        let live_rx = live_rx.clone();
        tokio::spawn(async move {
            serve_connection(stream, peer, router, builder, settings.idle_timeout, stop).await;
            drop(admitted);
            drop(live_rx);
        });
    }
    drop(listener);
    drop(live_rx);
    live.closed().await;
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    builder: hyper::server::conn::http1::Builder,
    idle_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let started = Instant::now();
    let activity = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Watched {
        inner: stream,
        started,
        activity: activity.clone(),
    });
    // Requests being answered: a long one (a trail verification) moves no
    // byte while it works, and is not idle for that.
    let busy = Arc::new(AtomicUsize::new(0));
    let counted = busy.clone();
    // The peer address feeds the per-address throttles and the console's
    // login throttles, as `into_make_service_with_connect_info` gave it.
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        let answering = Answering::new(&counted);
        let router = router.clone();
        async move {
            let answer = router.oneshot(request).await;
            drop(answering);
            answer
        }
    });
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let idle = async {
        loop {
            if busy.load(Ordering::Relaxed) > 0 {
                tokio::time::sleep(idle_timeout).await;
                continue;
            }
            let last = started + Duration::from_millis(activity.load(Ordering::Relaxed));
            let deadline = last + idle_timeout;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    };
    tokio::pin!(idle);
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            // Dropping the connection closes the socket.
            () = &mut idle => return,
            () = stopped(&mut stop), if !stopping => {
                connection.as_mut().graceful_shutdown();
                stopping = true;
            }
        }
    }
}

/// One request being answered on a connection, counted while it lives.
struct Answering(Arc<AtomicUsize>);

impl Answering {
    fn new(busy: &Arc<AtomicUsize>) -> Answering {
        busy.fetch_add(1, Ordering::Relaxed);
        Answering(busy.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// When `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// A socket that notes when a byte last moved (milliseconds from `started`).
struct Watched {
    inner: TcpStream,
    started: Instant,
    activity: Arc<AtomicU64>,
}

impl Watched {
    fn touch(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.activity.store(now, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
