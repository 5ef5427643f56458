//! `Slot`: the current reference to a supervised actor. The session swaps a restarted
//! actor in; everyone who holds the slot (the pipeline, the gate, agents) reaches the new
//! actor on their next message, instead of keeping a reference frozen at start-up.
//!
//! A message that could not be delivered (the actor had already died) is handed to the
//! replacement once the supervisor has swapped it in: nothing happened yet, so sending it
//! again is safe. A message the dead actor had received but not answered is not retried:
//! its caller gets `CallError::Gone`, and decides (the pipeline turns it into an error
//! result).
//!
//! A slot may keep a journal (`Slot::journaled`): every message sent through it is shown
//! to the journal before it is sent, so the supervisor knows what was sent even when the
//! actor dies with the message unread in its mailbox (the gate's registrations).

use std::sync::Arc;
use std::time::Duration;

use ractor::{ActorRef, MessagingErr, RpcReplyPort};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// How long a message to a dead actor waits for its replacement before it is given up.
pub const REPLACEMENT_WAIT: Duration = Duration::from_secs(10);

/// How long a caller whose answer was lost with a dying actor waits before it goes on.
pub(super) const SETTLE: Duration = Duration::from_millis(50);

/// Why a call through a slot got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The actor did not answer within the time allowed.
    #[error("did not answer in time")]
    Timeout,
    /// The actor stopped before answering (it crashed with the call in flight), or no
    /// replacement came in time.
    #[error("stopped before answering")]
    Gone,
}

/// Sees each message sent through a journaled slot, before it is sent.
pub(super) type Journal<M> = Arc<dyn Fn(&M) + Send + Sync>;

/// The current reference to a supervised actor (cheap to clone; clones share it).
pub struct Slot<M: ractor::Message> {
    current: watch::Sender<ActorRef<M>>,
    journal: Option<Journal<M>>,
}

impl<M: ractor::Message> Clone for Slot<M> {
    fn clone(&self) -> Self {
        Self {
            current: self.current.clone(),
            journal: self.journal.clone(),
        }
    }
}

impl<M: ractor::Message> Slot<M> {
    /// A slot holding `actor`.
    pub fn new(actor: ActorRef<M>) -> Self {
        Self {
            current: watch::Sender::new(actor),
            journal: None,
        }
    }

    /// A slot holding `actor` that shows every message sent through it (by any clone) to
    /// `journal` first, in the order the senders send them.
    pub fn journaled(actor: ActorRef<M>, journal: Journal<M>) -> Self {
        Self {
            current: watch::Sender::new(actor),
            journal: Some(journal),
        }
    }

    fn record(&self, msg: &M) {
        if let Some(journal) = &self.journal {
            journal(msg);
        }
    }

    /// The actor as it is now.
    pub fn get(&self) -> ActorRef<M> {
        self.current.borrow().clone()
    }

    /// Swaps in a restarted actor (the supervisor's job).
    pub fn replace(&self, actor: ActorRef<M>) {
        self.current.send_replace(actor);
    }

    /// Whether `cell` is the actor this slot holds now.
    pub fn holds(&self, cell: &ractor::ActorCell) -> bool {
        self.current.borrow().get_id() == cell.get_id()
    }

    /// Sends without waiting for an answer. When the actor is already dead, the message
    /// goes to its replacement as soon as one is swapped in (in the background); it is
    /// dropped if none comes within `REPLACEMENT_WAIT`.
    pub fn cast(&self, msg: M) {
        self.forward(msg, drop);
    }

    /// Like `cast`, but a message that no actor took (no replacement came within
    /// `REPLACEMENT_WAIT`) is handed to `undelivered`, e.g. to answer its reply port.
    pub fn forward(&self, msg: M, undelivered: impl FnOnce(M) + Send + 'static) {
        self.record(&msg);
        let actor = self.get();
        if let Err(MessagingErr::SendErr(msg)) = actor.send_message(msg) {
            let slot = self.clone();
            tokio::spawn(async move {
                let deadline = Instant::now() + REPLACEMENT_WAIT;
                if let Err(msg) = slot.deliver(msg, actor, deadline).await {
                    undelivered(msg);
                }
            });
        }
    }

    /// Sends the message built around a reply port and waits for the answer, at most
    /// `timeout` (which includes any wait for a replacement).
    pub async fn call<T: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<T>) -> M,
        timeout: Duration,
    ) -> Result<T, CallError> {
        let deadline = Instant::now() + timeout;
        let (tx, rx) = oneshot::channel();
        if self.send(build(tx.into()), deadline).await.is_err() {
            return Err(CallError::Gone);
        }
        answer(rx, deadline).await
    }

    /// Sends `msg` (which may carry several reply ports: wait on each with [`answer`]),
    /// waiting until `deadline` at most for a replacement of a dead actor; gives the
    /// message back when none took it.
    pub async fn send(&self, msg: M, deadline: Instant) -> Result<(), M> {
        self.record(&msg);
        self.deliver(msg, self.get(), deadline).await
    }

    /// Delivers `msg`, first to `actor`, then to each replacement of a dead actor; gives
    /// the message back when none took it.
    async fn deliver(
        &self,
        mut msg: M,
        mut actor: ActorRef<M>,
        deadline: Instant,
    ) -> Result<(), M> {
        loop {
            match actor.send_message(msg) {
                Ok(()) => return Ok(()),
                Err(MessagingErr::SendErr(back)) => msg = back,
                // Any other error has consumed the message: nothing to give back or retry.
                Err(_) => return Ok(()),
            }
            actor = match self.replacement_of(&actor, deadline).await {
                Ok(next) => next,
                Err(_) => return Err(msg),
            };
        }
    }

    /// Waits until the slot holds another actor than `dead`.
    async fn replacement_of(
        &self,
        dead: &ActorRef<M>,
        deadline: Instant,
    ) -> Result<ActorRef<M>, CallError> {
        let mut rx = self.current.subscribe();
        let id = dead.get_id();
        let waited = tokio::time::timeout_at(deadline, rx.wait_for(|a| a.get_id() != id)).await;
        match waited {
            Ok(Ok(actor)) => Ok(actor.clone()),
            Ok(Err(_)) => Err(CallError::Gone),
            Err(_) => Err(CallError::Timeout),
        }
    }
}

/// The answer on `rx`, the port of a message sent through a slot, by `deadline`.
pub async fn answer<T>(rx: oneshot::Receiver<T>, deadline: Instant) -> Result<T, CallError> {
    match tokio::time::timeout_at(deadline, rx).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(_)) => {
            // An actor on the way died with the message: the reply port was dropped
            // while its panic unwound, before ractor marks it stopping. A message sent
            // to it in between would be lost with its mailbox, so the caller waits for
            // the supervisor to swap the replacement in before it sends another (the
            // model's next call then reaches it). Only a crash pays this.
            tokio::time::sleep(SETTLE.min(deadline.saturating_duration_since(Instant::now())))
                .await;
            Err(CallError::Gone)
        }
        Err(_) => Err(CallError::Timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ractor::{Actor, ActorProcessingErr};

    struct Echo;
    struct Ping(RpcReplyPort<&'static str>);
    impl ractor::Message for Ping {}

    impl Actor for Echo {
        type Msg = Ping;
        type State = &'static str;
        type Arguments = &'static str;
        async fn pre_start(
            &self,
            _: ActorRef<Ping>,
            name: &'static str,
        ) -> Result<&'static str, ActorProcessingErr> {
            Ok(name)
        }
        async fn handle(
            &self,
            _: ActorRef<Ping>,
            Ping(reply): Ping,
            name: &mut &'static str,
        ) -> Result<(), ActorProcessingErr> {
            let _ = reply.send(name);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_call_to_a_dead_actor_is_answered_by_its_replacement() {
        let (old, _) = Actor::spawn(None, Echo, "old").await.unwrap();
        let slot = Slot::new(old.clone());
        assert_eq!(slot.call(Ping, Duration::from_secs(5)).await, Ok("old"));
        old.kill_and_wait(None).await.unwrap();
        let waiting = tokio::spawn({
            let slot = slot.clone();
            async move { slot.call(Ping, Duration::from_secs(30)).await }
        });
        let (new, _) = Actor::spawn(None, Echo, "new").await.unwrap();
        slot.replace(new);
        assert_eq!(waiting.await.unwrap(), Ok("new"));
    }

    #[tokio::test]
    async fn a_journaled_slot_records_each_message_even_one_its_dead_actor_never_read() {
        let seen = Arc::new(std::sync::Mutex::new(0usize));
        let (old, _) = Actor::spawn(None, Echo, "old").await.unwrap();
        let counter = seen.clone();
        let journal: Journal<Ping> = Arc::new(move |_: &Ping| *counter.lock().unwrap() += 1);
        let slot = Slot::journaled(old.clone(), journal);
        assert_eq!(slot.call(Ping, Duration::from_secs(5)).await, Ok("old"));
        old.kill_and_wait(None).await.unwrap();
        // Sent to a dead actor with no replacement: never handled, but recorded.
        let answer = slot.clone().call(Ping, Duration::from_millis(50)).await;
        assert_eq!(answer, Err(CallError::Gone));
        assert_eq!(*seen.lock().unwrap(), 2);
    }

    #[tokio::test]
    async fn with_no_replacement_the_call_ends_within_its_time() {
        let (old, _) = Actor::spawn(None, Echo, "old").await.unwrap();
        let slot = Slot::new(old.clone());
        old.kill_and_wait(None).await.unwrap();
        let answer = slot.call(Ping, Duration::from_millis(50)).await;
        assert_eq!(answer, Err(CallError::Gone));
    }
}
