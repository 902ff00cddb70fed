//! A server's stderr, kept in a bounded ring buffer and never printed (M11 shows its last line).
//!
//! The pipe is drained continuously: a full pipe blocks the server (64 KiB on Linux, 4 KiB on
//! Windows).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// Bytes of stderr kept per server.
pub const RING_BYTES: usize = 8 * 1024;
/// A longer line is cut (progress bars that never print `\n`).
const MAX_LINE: usize = 1024;

#[derive(Default)]
struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
    partial: Vec<u8>,
}

impl Ring {
    fn push_line(&mut self, raw: &[u8]) {
        let line = String::from_utf8_lossy(raw).trim_end_matches(['\r', '\n']).to_string();
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > RING_BYTES && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len();
            }
        }
    }
}

/// The tail of one server's stderr.
#[derive(Clone)]
pub struct StderrTail {
    ring: Arc<Mutex<Ring>>,
    done: watch::Receiver<bool>,
}

impl StderrTail {
    /// Start draining `pipe` in a task.
    pub fn spawn<R: AsyncRead + Unpin + Send + 'static>(mut pipe: R) -> Self {
        let ring = Arc::new(Mutex::new(Ring::default()));
        let (tx, done) = watch::channel(false);
        let r = ring.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                let n = match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut ring = r.lock().unwrap_or_else(|e| e.into_inner());
                for &b in &buf[..n] {
                    if b == b'\n' || b == b'\r' {
                        if !ring.partial.is_empty() {
                            let line = std::mem::take(&mut ring.partial);
                            ring.push_line(&line);
                        }
                    } else if ring.partial.len() < MAX_LINE {
                        ring.partial.push(b);
                    }
                }
            }
            {
                let mut ring = r.lock().unwrap_or_else(|e| e.into_inner());
                if !ring.partial.is_empty() {
                    let line = std::mem::take(&mut ring.partial);
                    ring.push_line(&line);
                }
            }
            let _ = tx.send(true);
        });
        Self { ring, done }
    }

    /// A tail with no pipe behind it (a server that never started).
    pub fn empty() -> Self {
        let (_tx, done) = watch::channel(true);
        Self {
            ring: Arc::new(Mutex::new(Ring::default())),
            done,
        }
    }

    /// The last non-empty line, or `(no stderr output)`.
    pub fn last_line(&self) -> String {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        ring.lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| "(no stderr output)".to_string())
    }

    /// All kept lines (oldest first).
    pub fn lines(&self) -> Vec<String> {
        self.ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lines
            .iter()
            .cloned()
            .collect()
    }

    /// Wait until the pipe is closed (or `max` passes), so the last line is complete.
    pub async fn settle(&self, max: std::time::Duration) {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(max, done.wait_for(|d| *d)).await;
    }
}
