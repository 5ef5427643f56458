//! Round trips of every remote message type, and refusals of malformed frames.

use super::*;
use crate::events::EventKind;
use ractor::Message;

fn spawn() -> RemoteSpawn {
    RemoteSpawn {
        task_id: "t1234567".into(),
        lead: "crew.lead.abc".into(),
        description: "write a file".into(),
        prompt: "write hello.txt".into(),
        agent: AgentWire {
            id: "remote-writer/t1234567".into(),
            model: "script:/tmp/s.json".into(),
            system_prompt: "You write.".into(),
            allowed_tools: Some(vec!["write_file".into(), "run_command".into()]),
            max_turns: 7,
            max_tokens: 8192,
        },
        rules: vec![RuleWire {
            text: "Bash(git push:*)".into(),
            kind: Verdict::Deny,
            layer: Layer::User,
        }],
        base_commit: "0123456789abcdef0123456789abcdef01234567".into(),
        branch: "crew/t1234567/write-a-file".into(),
        mode: crate::permission::PermissionMode::DontAsk,
        bundle: (0..=255u8).cycle().take(100_000).collect(),
    }
}

fn result() -> RemoteResult {
    RemoteResult {
        task_id: "t1234567".into(),
        node: "w1".into(),
        status: RemoteStatus::Completed,
        result: "done".into(),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 3,
            ..Usage::default()
        },
        tool_calls: 2,
        head: Some("89abcdef0123456789abcdef0123456789abcdef".into()),
        phases: Phases {
            checkout_ms: 1,
            run_ms: 2,
            bundle_ms: 3,
        },
        bundle: b"# v2 git bundle\n\0\x01binary".to_vec(),
    }
}

fn to_worker_round_trip(m: ToWorker) -> ToWorker {
    let bytes = WorkerMsg::Remote(m).serialize().unwrap();
    match WorkerMsg::deserialize(bytes) {
        Ok(WorkerMsg::Remote(back)) => back,
        _ => panic!("did not decode"),
    }
}

fn to_lead_round_trip(m: ToLead) -> ToLead {
    let bytes = LeadLinkMsg::Remote(m).serialize().unwrap();
    match LeadLinkMsg::deserialize(bytes) {
        Ok(LeadLinkMsg::Remote(back)) => back,
        _ => panic!("did not decode"),
    }
}

#[test]
fn every_message_to_a_worker_round_trips() {
    let all = vec![
        ToWorker::Hello {
            lead: "crew.lead.x".into(),
            node_id: 3,
        },
        ToWorker::Spawn(Box::new(spawn())),
        ToWorker::Stop {
            task_id: "t1".into(),
        },
        ToWorker::Handback {
            task_id: "t2".into(),
        },
    ];
    for m in all {
        assert_eq!(to_worker_round_trip(m.clone()), m);
    }
}

#[test]
fn every_message_to_a_lead_round_trips() {
    let all = vec![
        ToLead::Status(WorkerStatus {
            node: "w1".into(),
            slots: 4,
            running: vec!["t1".into()],
            kept: vec!["t0".into()],
            node_id: 9,
        }),
        ToLead::Started {
            task_id: "t1".into(),
            node: "w1".into(),
        },
        ToLead::Event {
            task_id: "t1".into(),
            event: Event {
                agent: "remote-writer/t1".into(),
                kind: EventKind::Error {
                    message: "boom".into(),
                },
            },
        },
        ToLead::Finished(result()),
        ToLead::Finished(RemoteResult {
            head: None,
            bundle: Vec::new(),
            status: RemoteStatus::Failed,
            ..result()
        }),
        ToLead::Refused {
            task_id: "t1".into(),
            reason: "no free slot".into(),
        },
    ];
    for m in all {
        assert_eq!(to_lead_round_trip(m.clone()), m);
    }
}

#[test]
fn the_bundle_travels_raw_not_as_json() {
    let s = spawn();
    let size = s.bundle.len();
    let SerializedMessage::Cast { args, .. } = WorkerMsg::Remote(ToWorker::Spawn(Box::new(s)))
        .serialize()
        .unwrap()
    else {
        panic!("not a cast")
    };
    assert!(args.len() < size + 2_000, "{} bytes for {size}", args.len());
}

#[test]
fn malformed_frames_are_refused_without_panicking() {
    let bad = [
        vec![],
        vec![0, 0, 0],
        vec![0, 0, 1, 0, b'{'],
        vec![255, 255, 255, 255, b'{'],
        {
            let mut v = 2u32.to_be_bytes().to_vec();
            v.extend_from_slice(b"{}");
            v
        },
    ];
    for args in bad {
        assert!(WorkerMsg::deserialize(frame(args.clone())).is_err());
        assert!(LeadLinkMsg::deserialize(frame(args)).is_err());
    }
    let other = SerializedMessage::Cast {
        variant: "other".into(),
        args: encode(
            &ToWorker::Stop {
                task_id: "t".into(),
            },
            &[],
        )
        .unwrap(),
        metadata: None,
    };
    assert!(WorkerMsg::deserialize(other).is_err());
}

#[test]
fn local_variants_never_cross_nodes() {
    let (tx, _rx) = oneshot::channel();
    assert!(WorkerMsg::Status(tx).serialize().is_err());
    assert!(
        LeadLinkMsg::Release {
            task_id: "t".into()
        }
        .serialize()
        .is_err()
    );
}
