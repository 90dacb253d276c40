//! One HTTP/1.1 listener a client cannot exhaust (SPEC §11): at most `max_connections` at
//! once (the next are closed as they are accepted), request headers within `header_read`, a
//! connection closed after `idle` without a byte either way, a whole request (body included)
//! answered within `request` or with 408. ork's probes have a listener of their own, so that a
//! flood of the inspector's port leaves them answering.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

/// How much of a listener one client may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read: Duration,
    pub idle: Duration,
    pub request: Duration,
}

/// Serves `app` on `listener` until the process ends (over TLS with `tls`, the handshake
/// within `header_read`); the peer's address reaches the handlers as axum's
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, most likely: wait for some to be freed.
                tracing::debug!(error = %e, "accepting an HTTP connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "HTTP connection refused: at the connection cap");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                let answer = app.clone().oneshot(req.map(Body::new));
                async move {
                    match tokio::time::timeout(limits.request, answer).await {
                        Ok(answered) => answered,
                        Err(_) => Ok((StatusCode::REQUEST_TIMEOUT, "the request took too long\n")
                            .into_response()),
                    }
                }
            });
            let idle = Idle::new(stream, limits.idle);
            let http = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read)
                .clone();
            let served = match tls {
                None => http.serve_connection(TokioIo::new(idle), service).await,
                Some(tls) => {
                    match tokio::time::timeout(limits.header_read, tls.accept(idle)).await {
                        Ok(Ok(stream)) => {
                            http.serve_connection(TokioIo::new(stream), service).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake took too long");
                            return;
                        }
                    }
                }
            };
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "HTTP connection ended");
            }
        });
    }
}

/// A connection that fails once `idle` passed without a byte read or written.
struct Idle {
    io: TcpStream,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl Idle {
    fn new(io: TcpStream, idle: Duration) -> Idle {
        Idle {
            io,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }

    fn touched(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    /// `Ready(Err)` once idle too long, else `Pending` (woken at the deadline).
    fn expired<T>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "idle HTTP connection",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Idle {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.touched();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.expired(cx),
        }
    }
}

impl AsyncWrite for Idle {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    this.touched();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.expired(cx),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Pending => this.expired(cx),
            done => done,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
