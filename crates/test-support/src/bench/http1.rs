//! A minimal HTTP/1.1 keep-alive client for the bench's own service on 127.0.0.1 (the baseline's
//! calls and the call counter), so the bench needs no HTTP client dependency.

use std::net::SocketAddr;

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One keep-alive connection; reconnects when the server closed it.
#[derive(Debug)]
pub struct Conn {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Conn {
        Conn { addr, stream: None }
    }

    /// Sends one request and reads the whole answer: (status code, body).
    ///
    /// # Errors
    /// When the service cannot be reached or answers something that is not HTTP/1.1.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        // A kept-alive connection may have been closed by the server: one retry on a fresh one.
        match self.try_request(method, path, body).await {
            Ok(r) => Ok(r),
            Err(_) => {
                self.stream = None;
                self.try_request(method, path, body).await
            }
        }
    }

    async fn try_request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        if self.stream.is_none() {
            let s = TcpStream::connect(self.addr)
                .await
                .with_context(|| format!("connecting to {}", self.addr))?;
            s.set_nodelay(true)?;
            self.stream = Some(BufReader::new(s));
        }
        let stream = self.stream.as_mut().context("connection just opened")?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.get_mut().write_all(head.as_bytes()).await?;
        stream.get_mut().write_all(body).await?;
        let mut line = String::new();
        if stream.read_line(&mut line).await? == 0 {
            bail!("connection closed");
        }
        let code: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .with_context(|| format!("not an HTTP status line: {line:?}"))?;
        let mut length = 0usize;
        let mut close = false;
        loop {
            line.clear();
            stream.read_line(&mut line).await?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((name, value)) = l.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse()?;
                } else if name.eq_ignore_ascii_case("connection") {
                    close = value.trim().eq_ignore_ascii_case("close");
                }
            }
        }
        let mut answer = vec![0; length];
        stream.read_exact(&mut answer).await?;
        if close {
            self.stream = None;
        }
        Ok((code, answer))
    }
}
