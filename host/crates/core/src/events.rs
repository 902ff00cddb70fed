//! The one event path of a session. Everything that happens is emitted once on the
//! [`EventBus`]; sinks take it from there: the transcripts (a sink per file), the hooks of the
//! deployment layer (a slot: any [`EventSink`] given to the builder), and last the front end's
//! channel — last, so that when a front end sees an event its transcript line is already written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::mpsc;

use cst_protocol::Event;

/// Something that receives every event of a session, in order. Called on the emitting task:
/// keep it short and never block on a person.
pub trait EventSink: Send + Sync {
    fn on_event(&self, event: &Event);
}

/// Identifies a sink added with [`EventBus::add`], to remove it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkId(u64);

/// Cheap to clone; every clone emits to the same sinks.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

struct Inner {
    sinks: RwLock<Vec<(SinkId, Arc<dyn EventSink>)>>,
    next: AtomicU64,
    front_end: Option<mpsc::UnboundedSender<Event>>,
}

impl EventBus {
    /// A bus whose last sink is the front end's channel (`None`: no front end, e.g. a test).
    pub fn new(front_end: Option<mpsc::UnboundedSender<Event>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                sinks: RwLock::new(Vec::new()),
                next: AtomicU64::new(1),
                front_end,
            }),
        }
    }

    pub fn add(&self, sink: Arc<dyn EventSink>) -> SinkId {
        let id = SinkId(self.inner.next.fetch_add(1, Ordering::Relaxed));
        self.inner
            .sinks
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, sink));
        id
    }

    pub fn remove(&self, id: SinkId) {
        self.inner
            .sinks
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(i, _)| *i != id);
    }

    /// Hand `event` to every sink, then to the front end. Returns false when the front end is
    /// gone (or there is none).
    pub fn emit(&self, event: Event) -> bool {
        // Cloned out so a sink may add or remove sinks without deadlocking.
        let sinks: Vec<Arc<dyn EventSink>> = self
            .inner
            .sinks
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for s in sinks {
            s.on_event(&event);
        }
        match &self.inner.front_end {
            Some(tx) => tx.send(event).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Log(Mutex<Vec<String>>);

    impl EventSink for Log {
        fn on_event(&self, event: &Event) {
            if let Event::Warning { message } = event {
                self.0.lock().unwrap().push(message.clone());
            }
        }
    }

    #[test]
    fn sinks_then_front_end_and_removal() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let bus = EventBus::new(Some(tx));
        let log = Arc::new(Log(Mutex::new(Vec::new())));
        let id = bus.add(log.clone());
        assert!(bus.emit(Event::Warning { message: "one".into() }));
        bus.remove(id);
        bus.emit(Event::Warning { message: "two".into() });
        assert_eq!(*log.0.lock().unwrap(), vec!["one".to_string()]);
        assert!(matches!(rx.try_recv(), Ok(Event::Warning { message }) if message == "one"));
        assert!(matches!(rx.try_recv(), Ok(Event::Warning { message }) if message == "two"));
        drop(rx);
        assert!(!bus.emit(Event::TurnStarted));
    }
}
