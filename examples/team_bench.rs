//! Team messaging costs, measured in one run:
//!
//! - round trip between two teammate-like actors through the real team path: A's
//!   `Mailbox::send` is a call to the `Team` actor, which appends the message to B's durable
//!   inbox and wakes B's actor through the waker B registered (`TeamMsg::Join`); B takes its
//!   unread mail (`Mailbox::take`), injects it into its conversation, acknowledges it
//!   (`Mailbox::ack`) and answers the same way; A takes and acknowledges the answer. p50 and
//!   p99 against a bare ractor round trip of the same shape (A casts B, B casts A) in the
//!   same run, interleaved, with the ratio. Run once with the inboxes on the temp
//!   directory's file system and once on `/dev/shm` (tmpfs) when it exists.
//! - memory per idle teammate-like actor joined to a team actor, its inbox opened (one
//!   take), holding a conversation: RSS growth over N of them.
//!
//! `cargo run --release --example team_bench -- [ROUND_TRIPS] [IDLE_ACTORS]`
//! (defaults 2000 and 1000).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crewmaster::protocol::{ContentBlock, Message, Role};
use crewmaster::team::actor::{Mailbox, TeamActor, TeamMsg};
use crewmaster::team::{Member, MemberName, Outgoing, Recipient, Team};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

/// Messages of the benchmark actors.
enum Msg {
    /// Start one round trip; answered when the reply is back.
    Kick(RpcReplyPort<()>),
    /// Mail (or, bare, a plain message) has arrived.
    Wake,
    /// Who to talk to (bare only; the team path addresses by name).
    Peer(ActorRef<Msg>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for Msg {}

/// A teammate-like actor: with a mailbox, every message goes through the team actor and
/// the durable inboxes, as a teammate's do.
struct Mate;

struct MateState {
    me: MemberName,
    peer: Option<ActorRef<Msg>>,
    mailbox: Option<Mailbox>,
    pending: Option<RpcReplyPort<()>>,
    conversation: Vec<Message>,
}

struct MateArgs {
    me: MemberName,
    mailbox: Option<Mailbox>,
    conversation: Vec<Message>,
}

impl Actor for Mate {
    type Msg = Msg;
    type State = MateState;
    type Arguments = MateArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Msg>,
        args: MateArgs,
    ) -> Result<MateState, ActorProcessingErr> {
        if let Some(mailbox) = &args.mailbox {
            // As a teammate does: the team actor wakes it when mail arrives.
            mailbox.actor.cast(TeamMsg::Join(
                args.me.clone(),
                Arc::new(move || {
                    let _ = myself.cast(Msg::Wake);
                }),
            ))?;
        }
        Ok(MateState {
            me: args.me,
            peer: None,
            mailbox: args.mailbox,
            pending: None,
            conversation: args.conversation,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Msg>,
        msg: Msg,
        state: &mut MateState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            Msg::Peer(peer) => state.peer = Some(peer),
            Msg::Kick(reply) => {
                state.pending = Some(reply);
                send(state).await?;
            }
            Msg::Wake => {
                if let Some(mailbox) = &state.mailbox {
                    let delivery = mailbox.take().await;
                    if delivery.texts.is_empty() {
                        // The team actor's poll woke it with nothing new.
                        return Ok(());
                    }
                    // Injected at the turn boundary, as a teammate does, then acknowledged
                    // (dropped afterwards, so the conversation does not grow over
                    // thousands of round trips).
                    let kept = state.conversation.len();
                    state
                        .conversation
                        .extend(delivery.texts.into_iter().map(|text| Message {
                            role: Role::User,
                            content: vec![ContentBlock::Text { text }],
                        }));
                    if let Some(through) = delivery.ack {
                        mailbox.ack(through).await;
                    }
                    state.conversation.truncate(kept);
                }
                match state.pending.take() {
                    Some(reply) => {
                        let _ = reply.send(());
                    }
                    None => send(state).await?,
                }
            }
        }
        Ok(())
    }
}

/// Sends one message to the peer: through the team actor and its inbox, or bare.
async fn send(state: &mut MateState) -> Result<(), ActorProcessingErr> {
    match &state.mailbox {
        Some(mailbox) => {
            let to = Recipient::Member(peer_name(&state.me));
            mailbox.send(to, Outgoing::text("ping")).await?;
        }
        None => state.peer.as_ref().ok_or("no peer")?.cast(Msg::Wake)?,
    }
    Ok(())
}

fn peer_name(me: &MemberName) -> MemberName {
    let other = if me.as_str() == "alice" {
        "bob"
    } else {
        "alice"
    };
    MemberName::parse(other).unwrap_or_else(|_| MemberName::lead())
}

/// Two mates, bare (`None`) or on `team` through its team actor.
async fn pair(team: Option<&Team>) -> anyhow::Result<Pair> {
    let actor = match team {
        Some(team) => Some(Actor::spawn(None, TeamActor, team.clone()).await?.0),
        None => None,
    };
    let spawn = |n: &str| {
        let me = MemberName::parse(n).expect("a valid name");
        let mailbox = team
            .zip(actor.as_ref())
            .map(|(team, actor)| Mailbox::new(team.clone(), me.clone(), actor.clone()));
        let args = MateArgs {
            me,
            mailbox,
            conversation: Vec::new(),
        };
        Actor::spawn(None, Mate, args)
    };
    let (a, _) = spawn("alice").await?;
    let (b, _) = spawn("bob").await?;
    a.cast(Msg::Peer(b.clone()))?;
    b.cast(Msg::Peer(a.clone()))?;
    Ok(Pair { a, b, actor })
}

struct Pair {
    a: ActorRef<Msg>,
    b: ActorRef<Msg>,
    actor: Option<ActorRef<TeamMsg>>,
}

impl Pair {
    fn stop(self) {
        self.a.stop(None);
        self.b.stop(None);
        if let Some(actor) = self.actor {
            actor.stop(None);
        }
    }
}

async fn round_trip(a: &ActorRef<Msg>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    match a.call(Msg::Kick, Some(Duration::from_secs(10))).await? {
        ractor::rpc::CallResult::Success(()) => Ok(start.elapsed()),
        _ => anyhow::bail!("no answer"),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn team_in(dir: &Path, name: &str) -> anyhow::Result<Team> {
    let team = Team::open(dir, name)?;
    for n in ["alice", "bob"] {
        team.add_member(Member::new(MemberName::parse(n)?, n, "bench", None))?;
    }
    Ok(team)
}

/// Interleaved blocks of bare and team round trips; prints p50/p99 and the ratios.
async fn round_trips(label: &str, dir: &Path, n: usize) -> anyhow::Result<()> {
    let team = team_in(dir, "round-trips")?;
    let bare_pair = pair(None).await?;
    let team_pair = pair(Some(&team)).await?;
    for _ in 0..100 {
        round_trip(&bare_pair.a).await?;
        round_trip(&team_pair.a).await?;
    }
    let (mut bare, mut inbox) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n.div_ceil(100) {
        for _ in 0..100 {
            bare.push(round_trip(&bare_pair.a).await?);
        }
        for _ in 0..100 {
            inbox.push(round_trip(&team_pair.a).await?);
        }
    }
    bare.sort();
    inbox.sort();
    let (b50, b99) = (percentile(&bare, 0.5), percentile(&bare, 0.99));
    let (t50, t99) = (percentile(&inbox, 0.5), percentile(&inbox, 0.99));
    println!("round trip, inboxes on {label} ({} each):", bare.len());
    println!(
        "  bare ractor:        p50 {:>9.1} µs   p99 {:>9.1} µs",
        micros(b50),
        micros(b99)
    );
    println!(
        "  team actor + inbox: p50 {:>9.1} µs   p99 {:>9.1} µs   (target p50 ≤ 50 µs: {})",
        micros(t50),
        micros(t99),
        if micros(t50) <= 50.0 { "met" } else { "missed" }
    );
    println!(
        "  ratio team/bare:    p50 {:>9.1}×     p99 {:>9.1}×",
        micros(t50) / micros(b50),
        micros(t99) / micros(b99)
    );
    bare_pair.stop();
    team_pair.stop();
    // Every message of the run is in the inboxes, each acknowledged.
    team.flush()?;
    for name in ["alice", "bob"] {
        let name = MemberName::parse(name)?;
        let (sent, unread) = (team.inbox_history(&name)?.len(), team.unread_count(&name)?);
        anyhow::ensure!(
            sent == n.div_ceil(100) * 100 + 100 && unread == 0,
            "{name}'s inbox holds {sent} messages, {unread} unread"
        );
    }
    Ok(())
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Resident set size of this process, in bytes.
fn rss() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("/proc/self/statm has no resident field"))?
        .parse()?;
    Ok(pages * 4096)
}

/// A conversation of 20 messages, ~8 KiB of text: what an idle teammate holds.
fn conversation(i: usize) -> Vec<Message> {
    (0..20)
        .map(|k| Message {
            role: if k % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            content: vec![ContentBlock::Text {
                text: format!("teammate {i} message {k}: {}", "x".repeat(400)),
            }],
        })
        .collect()
}

async fn idle_memory(dir: &Path, n: usize) -> anyhow::Result<()> {
    let team = team_in(dir, "idle")?;
    let (actor, _) = Actor::spawn(None, TeamActor, team.clone()).await?;
    let payload = conversation(0)
        .iter()
        .map(|m| m.text().len())
        .sum::<usize>();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Conversations are built after the first reading: the growth includes them.
    let before = rss()?;
    let conversations: Vec<Vec<Message>> = (0..n).map(conversation).collect();
    let mut actors = Vec::with_capacity(n);
    for (i, conv) in conversations.into_iter().enumerate() {
        let me = MemberName::parse(&format!("idle{i}"))?;
        let mailbox = Mailbox::new(team.clone(), me.clone(), actor.clone());
        let args = MateArgs {
            me,
            mailbox: Some(mailbox),
            conversation: conv,
        };
        let (mate, _) = Actor::spawn(None, Mate, args).await?;
        // It looks at its (empty) inbox once, as a teammate does before going idle.
        mate.cast(Msg::Wake)?;
        actors.push(mate);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss()?;
    let per = after.saturating_sub(before) as f64 / n as f64;
    println!(
        "idle teammate-like actors: {n}, each joined to the team actor with its inbox open, holding a 20-message conversation"
    );
    println!(
        "  RSS growth per actor: {:.1} KiB (conversation text {:.1} KiB of it; target ≤ 1024 KiB: {})",
        per / 1024.0,
        payload as f64 / 1024.0,
        if per <= 1024.0 * 1024.0 {
            "met"
        } else {
            "missed"
        }
    );
    for a in actors {
        a.stop(None);
    }
    actor.stop(None);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let idle: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let disk = tempfile::tempdir()?;
    round_trips(&format!("{} (disk)", disk.path().display()), disk.path(), n).await?;
    if Path::new("/dev/shm").is_dir() {
        let shm = tempfile::tempdir_in("/dev/shm")?;
        round_trips("/dev/shm (tmpfs)", shm.path(), n).await?;
    }
    idle_memory(disk.path(), idle).await?;
    Ok(())
}
