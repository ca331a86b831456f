//! Connections whose peer stops reading are closed.
//!
//! An event-stream client that stops reading (a suspended laptop, a stuck proxy) fills its socket's buffers;
//! hyper then waits on the write forever, the connection stays open, and its stream's broadcast subscription
//! keeps every event the other viewers have long read. No response of Tower's needs a peer that reads nothing
//! for [`STALLED_WRITE_LIMIT`], so a write blocked that long fails: hyper closes the connection, and dropping
//! the stream frees its place in the broadcast. A peer that reads slowly but reads is never cut.

use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// How long a write may wait for the peer to read before the connection is closed.
pub const STALLED_WRITE_LIMIT: Duration = Duration::from_secs(30);

/// A TCP listener whose connections close when a write stalls for `limit`.
#[derive(Debug)]
pub struct ClosingStalled {
    inner: TcpListener,
    limit: Duration,
}

impl ClosingStalled {
    /// Wraps `inner`.
    pub fn new(inner: TcpListener, limit: Duration) -> Self {
        Self { inner, limit }
    }
}

impl Listener for ClosingStalled {
    type Io = StallLimited<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // axum's own accept retries on the errors a listener can recover from.
        let (stream, peer) = Listener::accept(&mut self.inner).await;
        (StallLimited::new(stream, self.limit), peer)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// `io` whose writes fail with `TimedOut` once one has waited `limit` without progress.
#[derive(Debug)]
pub struct StallLimited<T> {
    io: T,
    limit: Duration,
    /// Set when a write first returns `Pending`, cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> StallLimited<T> {
    /// Wraps `io`.
    pub fn new(io: T, limit: Duration) -> Self {
        Self {
            io,
            limit,
            stalled: None,
        }
    }

    /// What a write that returned `poll` means: progress clears the stall, waiting starts or checks it.
    fn check<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.limit;
        let deadline = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the peer read nothing for {limit:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallLimited<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallLimited<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// Short, so the tests run in real time: what matters is that progress resets it.
    const LIMIT: Duration = Duration::from_millis(300);

    #[tokio::test]
    async fn a_peer_that_reads_nothing_is_cut_off_after_the_limit() {
        let (ours, _theirs) = tokio::io::duplex(1024);
        let mut limited = StallLimited::new(ours, LIMIT);
        let started = tokio::time::Instant::now();
        let write_until_refused = async {
            loop {
                if let Err(error) = limited.write_all(&[b'x'; 512]).await {
                    break error;
                }
            }
        };
        let error = tokio::time::timeout(Duration::from_secs(10), write_until_refused)
            .await
            .expect("a write to a peer reading nothing waited on");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(
            started.elapsed() >= LIMIT,
            "cut after {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_peer_that_reads_slowly_is_never_cut_off() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let mut limited = StallLimited::new(ours, LIMIT);
        let total = 8 * 1024;
        let reader = tokio::spawn(async move {
            let mut buf = [0_u8; 1024];
            let mut read = 0;
            // A read every 100 ms: far slower than the writer, but never stalled for the limit.
            while read < total {
                tokio::time::sleep(Duration::from_millis(100)).await;
                read += theirs.read(&mut buf).await.unwrap();
            }
            read
        });
        for _ in 0..total / 512 {
            limited.write_all(&[b'x'; 512]).await.unwrap();
        }
        assert_eq!(reader.await.unwrap(), total);
    }

    /// An endless response, as an event stream is, served through [`ClosingStalled`] on a real socket.
    async fn endless_server() -> SocketAddr {
        // A fallback, not a route: Tower's routes are registered only through the permission-declaring builder.
        let app = axum::Router::new().fallback(|| async {
            let chunks = futures::stream::repeat_with(|| {
                Ok::<_, std::convert::Infallible>(axum::body::Bytes::from_static(
                    &[b'x'; 16 * 1024],
                ))
            });
            axum::body::Body::from_stream(chunks)
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(axum::serve(ClosingStalled::new(listener, LIMIT), app).into_future());
        address
    }

    /// Connects with a small receive buffer, so a peer that stops reading fills it soon.
    async fn request(address: SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(address).await.unwrap();
        stream
            .write_all(b"GET /endless HTTP/1.1\r\nhost: tower\r\n\r\n")
            .await
            .unwrap();
        stream
    }

    #[tokio::test]
    async fn a_connection_that_stops_reading_is_closed_and_a_reading_one_is_not_slowed() {
        let address = endless_server().await;
        let mut stuck = request(address).await;
        let mut reading = request(address).await;

        // While the stuck peer reads nothing for ten limits, the other keeps receiving.
        let mut buf = vec![0_u8; 64 * 1024];
        let mut received = 0_usize;
        let until = tokio::time::Instant::now() + LIMIT * 10;
        while tokio::time::Instant::now() < until {
            received += reading.read(&mut buf).await.unwrap();
        }
        assert!(
            received > 1024 * 1024,
            "the reading peer got {received} bytes"
        );

        // The stuck peer's response ends: what its buffers held, then the close. Without the limit it is
        // endless and this read never finishes.
        let drained = tokio::time::timeout(Duration::from_secs(10), async {
            let mut total = 0_usize;
            loop {
                match stuck.read(&mut buf).await {
                    Ok(0) | Err(_) => break total,
                    Ok(n) => total += n,
                }
            }
        })
        .await
        .expect("the connection that stopped reading was never closed");
        assert!(drained > 0);
    }
}
