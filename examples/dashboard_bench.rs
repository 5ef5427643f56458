//! Event-to-page latency of the web dashboard: N agents stream text at once (each a task
//! publishing `TextDelta` events on a session's event bus, every event carrying the time it
//! was published), and an SSE client reads the dashboard's `/api/events`; the latency is
//! from `publish` to the client's receipt of the event's bytes. The real path: the
//! session's journal, its control socket, the dashboard server, its token check, SSE.
//! Beside it, in the same run, a raw axum SSE echo server that forwards the same bus's
//! events as they come, read by the same client: p50 and p99 of both, and the ratios.
//!
//! `cargo run --release --example dashboard_bench -- [AGENTS] [SECONDS] [INTERVAL_MS]`
//! (defaults 32 agents, 3 s, one event per agent every 10 ms).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "an example: it fails loudly and prints what it measures"
)]

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::response::sse::{Event as SseEvent, Sse};
use crewmaster::dashboard::{Dashboard, Exposure, Listen, Scope};
use crewmaster::events::{EventBus, EventKind};
use crewmaster::session::live::Live;
use futures::StreamExt;

struct Load {
    agents: usize,
    seconds: u64,
    interval: Duration,
}

/// Publishes the load on `bus`, each event's text the nanoseconds since `base`.
async fn stream_agents(bus: &EventBus, load: &Load, base: Instant) {
    let mut tasks = Vec::new();
    for n in 0..load.agents {
        let bus = bus.clone();
        let (interval, seconds) = (load.interval, load.seconds);
        tasks.push(tokio::spawn(async move {
            let agent = format!("general-purpose/t{n:07}");
            let end = Instant::now() + Duration::from_secs(seconds);
            let mut tick = tokio::time::interval(interval);
            while Instant::now() < end {
                tick.tick().await;
                let text = base.elapsed().as_nanos().to_string();
                bus.publish(&agent, EventKind::TextDelta { text });
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Reads the SSE stream at `url` until `stop`, recording each text delta's latency.
async fn read(response: reqwest::Response, base: Instant, expected: usize) -> Vec<u64> {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut latencies = Vec::with_capacity(expected);
    let deadline = Instant::now() + Duration::from_secs(60);
    while latencies.len() < expected && Instant::now() < deadline {
        let Ok(Some(Ok(chunk))) = tokio::time::timeout(Duration::from_secs(5), stream.next()).await
        else {
            break;
        };
        let now = base.elapsed().as_nanos() as u64;
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for data in event.lines().filter_map(|l| l.strip_prefix("data: ")) {
                let v: serde_json::Value = serde_json::from_str(data).unwrap();
                // The dashboard wraps each line as {"s": session, "e": line}.
                let e = if v.get("e").is_some() { &v["e"] } else { &v };
                if e["type"] == "text_delta"
                    && let Some(sent) = e["text"].as_str().and_then(|t| t.parse::<u64>().ok())
                {
                    latencies.push(now.saturating_sub(sent));
                }
            }
        }
    }
    latencies
}

fn percentile(sorted: &[u64], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Duration::from_nanos(sorted[i])
}

fn report(name: &str, mut latencies: Vec<u64>, expected: usize) -> (Duration, Duration) {
    latencies.sort_unstable();
    assert!(!latencies.is_empty(), "{name}: no events arrived");
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    println!(
        "{name:<28} {:>6}/{expected} events  p50 {:>9.3} ms  p99 {:>9.3} ms  max {:>9.3} ms",
        latencies.len(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        Duration::from_nanos(*latencies.last().unwrap()).as_secs_f64() * 1e3,
    );
    (p50, p99)
}

/// A raw axum SSE server forwarding `bus`'s events as JSON; its address.
async fn echo_server(bus: EventBus) -> String {
    let app = axum::Router::new().route(
        "/sse",
        axum::routing::get(move || {
            let rx = bus.subscribe();
            async move {
                let stream = futures::stream::unfold(rx, |mut rx| async move {
                    let e = rx.recv().await?;
                    let data = serde_json::to_string(&e).unwrap();
                    Some((Ok::<_, Infallible>(SseEvent::default().data(data)), rx))
                });
                Sse::new(stream)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/sse")
}

async fn run(load: Load) {
    let expected =
        load.agents * (load.seconds as usize * 1000 / load.interval.as_millis() as usize);
    let base = Instant::now();
    let http = reqwest::Client::new();
    println!(
        "{} agents streaming, one text delta each every {} ms for {} s (~{expected} events)",
        load.agents,
        load.interval.as_millis(),
        load.seconds
    );

    // The echo server first, on a bus of its own.
    let echo_bus = EventBus::new();
    let echo_url = echo_server(echo_bus.clone()).await;
    let response = http.get(&echo_url).send().await.unwrap();
    let reader = tokio::spawn(read(response, base, expected));
    stream_agents(&echo_bus, &load, base).await;
    let (echo50, echo99) = report("raw axum SSE echo", reader.await.unwrap(), expected);

    // The dashboard: a live session's bus, its control socket, the server, its guard.
    let tmp = tempfile::tempdir().unwrap();
    let bus = EventBus::new();
    let live = Live::start(&bus, tmp.path(), "bench", &tmp.path().join("session")).unwrap();
    let listen = Listen {
        addr: "127.0.0.1:0".parse().unwrap(),
        exposure: Exposure::LoopbackOnly,
    };
    let dashboard = Dashboard::start(listen, Scope::Own(live.entry().clone()))
        .await
        .unwrap();
    let url = dashboard.url().to_string();
    let (origin, token) = url.split_once("/?token=").unwrap();
    let response = http
        .get(format!("{origin}/api/events"))
        .header("x-crew-token", token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let reader = tokio::spawn(read(response, base, expected));
    // The page attaches to the session before the agents start.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream_agents(&bus, &load, base).await;
    let (dash50, dash99) = report("dashboard (event → page)", reader.await.unwrap(), expected);
    println!(
        "ratio dashboard/echo: p50 {:.2}x  p99 {:.2}x   (targets: p50 within 2x of echo, p99 <= 100 ms)",
        dash50.as_secs_f64() / echo50.as_secs_f64(),
        dash99.as_secs_f64() / echo99.as_secs_f64(),
    );
    dashboard.stop();
    live.close();
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("numbers"));
    let load = Load {
        agents: args.next().unwrap_or(32) as usize,
        seconds: args.next().unwrap_or(3),
        interval: Duration::from_millis(args.next().unwrap_or(10)),
    };
    let home = tempfile::tempdir().unwrap();
    // SAFETY: set before the runtime (and any other thread) starts: the live registry goes
    // under this temporary home, not the user's.
    unsafe { std::env::set_var("HOME", home.path()) };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(load));
}
