//! Requests waiting for a person (approvals, questions): each gets an id, the answer comes back
//! by id, and cancelling a turn withdraws them all (the waiter sees its channel closed).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::oneshot;

pub(crate) struct Pending<T> {
    open: Mutex<HashMap<u64, oneshot::Sender<T>>>,
    next_id: AtomicU64,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self {
            open: Mutex::default(),
            next_id: AtomicU64::new(1),
        }
    }
}

impl<T> Pending<T> {
    /// A new request: its id and where its answer arrives.
    pub fn open(&self) -> (u64, oneshot::Receiver<T>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        (id, rx)
    }

    /// Deliver an answer. Unknown ids (answered, withdrawn) are ignored.
    pub fn answer(&self, id: u64, answer: T) {
        let tx = self.lock().remove(&id);
        if let Some(tx) = tx {
            let _ = tx.send(answer);
        }
    }

    /// Drop one request (its waiter gave up).
    pub fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Withdraw every open request.
    pub fn withdraw_all(&self) {
        self.lock().clear();
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<T>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}
