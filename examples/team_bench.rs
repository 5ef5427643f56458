//! Team messaging costs, measured in one run:
//!
//! - round trip between two teammate-like actors through the durable inbox and the wake
//!   path (A appends to B's inbox with `Team::send` — fsynced — and casts B a wake-up; B
//!   reads its unread mail, acknowledges it, answers the same way; A reads and acks), p50
//!   and p99, against a bare ractor round trip of the same shape (A casts B, B casts A) in
//!   the same run, interleaved, with the ratio. The store is synchronous and called from
//!   `spawn_blocking`, as the team actors do. Run once with the inboxes on the temp
//!   directory's file system and once on `/dev/shm` (tmpfs, where fsync costs nothing) when
//!   it exists, to separate the disk's fsync from the code path.
//! - memory per idle teammate-like actor holding a conversation: RSS growth over N of them.
//!
//! `cargo run --release --example team_bench -- [ROUND_TRIPS] [IDLE_ACTORS]`
//! (defaults 2000 and 1000).

use std::path::Path;
use std::time::{Duration, Instant};

use crewmaster::protocol::{ContentBlock, Message, Role};
use crewmaster::team::{Member, MemberName, Outgoing, Recipient, Team};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

/// Messages of the benchmark actors.
enum Msg {
    /// Start one round trip; answered when the reply is back.
    Kick(RpcReplyPort<()>),
    /// Mail (or, bare, a plain message) has arrived.
    Wake,
    /// Who to talk to.
    Peer(ActorRef<Msg>),
}

/// A teammate-like actor: with `team`, every message goes through its durable inbox.
struct Mate;

struct MateState {
    me: MemberName,
    peer: Option<ActorRef<Msg>>,
    team: Option<Team>,
    pending: Option<RpcReplyPort<()>>,
    conversation: Vec<Message>,
}

struct MateArgs {
    me: MemberName,
    team: Option<Team>,
    conversation: Vec<Message>,
}

impl Actor for Mate {
    type Msg = Msg;
    type State = MateState;
    type Arguments = MateArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Msg>,
        args: MateArgs,
    ) -> Result<MateState, ActorProcessingErr> {
        Ok(MateState {
            me: args.me,
            peer: None,
            team: args.team,
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
                if let Some(team) = state.team.clone() {
                    let me = state.me.clone();
                    let mail = tokio::task::spawn_blocking(move || {
                        let unread = team.unread(&me)?;
                        if let Some(last) = unread.last() {
                            team.ack(&me, last.index + 1)?;
                        }
                        Ok::<_, crewmaster::team::TeamError>(unread)
                    })
                    .await??;
                    // Injected at the turn boundary, as a teammate does (then dropped, so
                    // the conversation does not grow over thousands of round trips).
                    state.conversation.extend(mail.into_iter().map(|e| Message {
                        role: Role::User,
                        content: vec![ContentBlock::Text { text: e.message }],
                    }));
                    state.conversation.clear();
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

/// Sends one message to the peer: through its inbox (then a wake-up), or bare.
async fn send(state: &mut MateState) -> Result<(), ActorProcessingErr> {
    let peer = state.peer.clone().ok_or("no peer")?;
    if let Some(team) = state.team.clone() {
        let (me, to) = (state.me.clone(), peer_name(&state.me));
        tokio::task::spawn_blocking(move || {
            team.send(&me, &Recipient::Member(to), Outgoing::text("ping"))
        })
        .await??;
    }
    peer.cast(Msg::Wake)?;
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

async fn pair(team: Option<Team>) -> anyhow::Result<(ActorRef<Msg>, ActorRef<Msg>)> {
    let spawn = |n: &str| {
        let args = MateArgs {
            me: MemberName::parse(n).expect("a valid name"),
            team: team.clone(),
            conversation: Vec::new(),
        };
        Actor::spawn(None, Mate, args)
    };
    let (a, _) = spawn("alice").await?;
    let (b, _) = spawn("bob").await?;
    a.cast(Msg::Peer(b.clone()))?;
    b.cast(Msg::Peer(a.clone()))?;
    Ok((a, b))
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
    let (bare_a, bare_b) = pair(None).await?;
    let (team_a, team_b) = pair(Some(team_in(dir, "round-trips")?)).await?;
    for _ in 0..100 {
        round_trip(&bare_a).await?;
        round_trip(&team_a).await?;
    }
    let (mut bare, mut team) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n.div_ceil(100) {
        for _ in 0..100 {
            bare.push(round_trip(&bare_a).await?);
        }
        for _ in 0..100 {
            team.push(round_trip(&team_a).await?);
        }
    }
    bare.sort();
    team.sort();
    let (b50, b99) = (percentile(&bare, 0.5), percentile(&bare, 0.99));
    let (t50, t99) = (percentile(&team, 0.5), percentile(&team, 0.99));
    println!("round trip, inboxes on {label} ({} each):", bare.len());
    println!(
        "  bare ractor:        p50 {:>9.1} µs   p99 {:>9.1} µs",
        micros(b50),
        micros(b99)
    );
    println!(
        "  inbox + wake path:  p50 {:>9.1} µs   p99 {:>9.1} µs   (target p50 ≤ 50 µs: {})",
        micros(t50),
        micros(t99),
        if micros(t50) <= 50.0 { "met" } else { "missed" }
    );
    println!(
        "  ratio team/bare:    p50 {:>9.1}×     p99 {:>9.1}×",
        micros(t50) / micros(b50),
        micros(t99) / micros(b99)
    );
    for actor in [bare_a, bare_b, team_a, team_b] {
        actor.stop(None);
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
        let args = MateArgs {
            me: MemberName::parse(&format!("idle{i}"))?,
            team: Some(team.clone()),
            conversation: conv,
        };
        actors.push(Actor::spawn(None, Mate, args).await?.0);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss()?;
    let per = after.saturating_sub(before) as f64 / n as f64;
    println!("idle teammate-like actors: {n}, each holding a 20-message conversation");
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
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let idle: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let disk = tempfile::tempdir()?;
    round_trips(
        &format!("{} (disk, fsync per message)", disk.path().display()),
        disk.path(),
        n,
    )
    .await?;
    if Path::new("/dev/shm").is_dir() {
        let shm = tempfile::tempdir_in("/dev/shm")?;
        round_trips("/dev/shm (tmpfs)", shm.path(), n).await?;
    }
    idle_memory(disk.path(), idle).await?;
    Ok(())
}
