//! `ask_user` round trips: a question goes out as [`Event::QuestionAsked`] with a request id, the
//! front end answers with `Op::Answer`. Cancel-safe: cancelling the turn withdraws every open
//! question, and a call future dropped half-way removes its own request.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::events::EventBus;
use crate::pending::Pending;
use cst_protocol::Event;
use cst_registry::question::{Questions, Unanswered};

/// The session's open questions.
pub struct QuestionBroker {
    bus: EventBus,
    pending: Pending<Option<String>>,
}

impl QuestionBroker {
    pub fn new(bus: EventBus) -> Self {
        Self {
            bus,
            pending: Pending::default(),
        }
    }

    /// Deliver a person's answer (`None`: declined). Unknown ids are ignored.
    pub fn answer(&self, request_id: u64, answer: Option<String>) {
        self.pending.answer(request_id, answer);
    }

    /// Withdraw every open question (the turn was cancelled).
    pub fn cancel_pending(&self) {
        self.pending.withdraw_all();
    }

    async fn ask_as(&self, question: &str, subagent: Option<u32>) -> Result<String, Unanswered> {
        let (request_id, rx) = self.pending.open();
        // Removes the request if this future is dropped before an answer (cancel, time limit).
        let _guard = Forget {
            broker: self,
            request_id,
        };
        let shown = self.bus.emit(Event::QuestionAsked {
            request_id,
            question: question.to_string(),
            subagent,
        });
        if !shown {
            return Err(Unanswered::NoListener);
        }
        match rx.await {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(Unanswered::Declined),
            Err(_) => Err(Unanswered::Withdrawn),
        }
    }

    /// The broker as seen by sub-agent `n` (its questions name it).
    pub fn for_subagent(self: &Arc<Self>, n: u32) -> Arc<dyn Questions> {
        Arc::new(SubAgentQuestions {
            broker: self.clone(),
            n,
        })
    }
}

struct Forget<'a> {
    broker: &'a QuestionBroker,
    request_id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.broker.pending.forget(self.request_id);
    }
}

impl Questions for QuestionBroker {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Result<String, Unanswered>> {
        Box::pin(self.ask_as(question, None))
    }
}

struct SubAgentQuestions {
    broker: Arc<QuestionBroker>,
    n: u32,
}

impl Questions for SubAgentQuestions {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Result<String, Unanswered>> {
        Box::pin(self.broker.ask_as(question, Some(self.n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    #[tokio::test]
    async fn answered_declined_withdrawn_and_dropped() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let broker = Arc::new(QuestionBroker::new(EventBus::new(Some(tx))));

        let b = broker.clone();
        let asking = tokio::spawn(async move { b.ask("colour?").await });
        let Some(Event::QuestionAsked {
            request_id,
            question,
            subagent,
        }) = rx.recv().await
        else {
            panic!("no question event")
        };
        assert_eq!((question.as_str(), subagent), ("colour?", None));
        broker.answer(request_id, Some("blue".into()));
        assert_eq!(asking.await.unwrap(), Ok("blue".into()));

        let b = broker.clone();
        let asking = tokio::spawn(async move { b.for_subagent(3).ask("size?").await });
        let Some(Event::QuestionAsked {
            request_id, subagent, ..
        }) = rx.recv().await
        else {
            panic!("no question event")
        };
        assert_eq!(subagent, Some(3));
        broker.answer(request_id, None);
        assert_eq!(asking.await.unwrap(), Err(Unanswered::Declined));

        let b = broker.clone();
        let asking = tokio::spawn(async move { b.ask("wait?").await });
        rx.recv().await.unwrap();
        broker.cancel_pending();
        assert_eq!(asking.await.unwrap(), Err(Unanswered::Withdrawn));

        // A dropped call leaves nothing behind.
        let b = broker.clone();
        let asking = tokio::spawn(async move { b.ask("gone?").await });
        rx.recv().await.unwrap();
        asking.abort();
        let _ = asking.await;
        assert!(broker.pending.is_empty());
    }
}
