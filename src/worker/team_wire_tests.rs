//! Round trips of every remote-teammate message, through the same frames as the cluster
//! sends (the bundles raw after the header), and a refusal of a frame that lies about
//! its fields.

use ractor::Message;

use super::*;
use crate::approver::{ApprovalAnswer, ApprovalRequest};
use crate::permission::{Decision, Source, Verdict};
use crate::protocol::ToolCall;
use crate::team::MemberName;
use crate::worker::protocol::{AgentWire, LeadLinkMsg, RuleWire, ToLead, ToWorker, WorkerMsg};

fn to_worker(m: ToWorker) -> ToWorker {
    match WorkerMsg::deserialize(WorkerMsg::Remote(m).serialize().unwrap()) {
        Ok(WorkerMsg::Remote(back)) => back,
        _ => panic!("did not decode"),
    }
}

fn to_lead(m: ToLead) -> ToLead {
    match LeadLinkMsg::deserialize(LeadLinkMsg::Remote(m).serialize().unwrap()) {
        Ok(LeadLinkMsg::Remote(back)) => back,
        _ => panic!("did not decode"),
    }
}

fn envelope(index: u64, kind: MessageKind) -> Envelope {
    Envelope {
        index,
        id: format!("m{index}"),
        from: MemberName::lead(),
        to: MemberName::parse("alice").unwrap(),
        seq: index + 1,
        sent_at_ms: 1_700_000_000_000,
        broadcast: index == 1,
        summary: Some("short".into()),
        message: "write note.txt".into(),
        kind,
    }
}

fn spawn() -> TeammateSpawn {
    TeammateSpawn {
        run: RemoteSpawn {
            task_id: "alice-0123abcd".into(),
            lead: "crew.lead.x".into(),
            description: "notes".into(),
            prompt: "wait for mail".into(),
            agent: AgentWire {
                id: "w/alice".into(),
                model: "script:/tmp/s.json".into(),
                system_prompt: "You are teammate `alice`.".into(),
                allowed_tools: Some(vec!["write_file".into(), "send_message".into()]),
                max_turns: 9,
                max_tokens: 4096,
            },
            rules: vec![RuleWire {
                text: "Write(asked.txt)".into(),
                kind: Verdict::Ask,
                layer: crate::permission::Layer::Project,
            }],
            base_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            branch: "crew/alice-0123abcd/notes".into(),
            mode: crate::permission::PermissionMode::DontAsk,
            bundle: (0..=255u8).cycle().take(10_000).collect(),
        },
        name: "alice".into(),
        mode: PermissionMode::AcceptEdits,
    }
}

fn request() -> ApprovalRequest {
    let mut decision = Decision::new(Verdict::Ask, Source::Mode, "an ask rule");
    decision.category = Some(crate::permission::Category::Write);
    ApprovalRequest {
        agent: "w/alice".into(),
        call: ToolCall {
            id: "call-1".into(),
            name: "write_file".into(),
            arguments: r#"{"path":"asked.txt","content":"x"}"#.into(),
        },
        decision,
        mode: PermissionMode::AcceptEdits,
        teammate: Some("alice".into()),
    }
}

#[test]
fn every_teammate_message_to_a_worker_round_trips() {
    let all = vec![
        ToWorker::SpawnTeammate(Box::new(spawn())),
        ToWorker::Mail(MailWire {
            task_id: "alice-0123abcd".into(),
            mail: vec![
                envelope(0, MessageKind::Text),
                envelope(1, MessageKind::ShutdownRequest),
                envelope(
                    2,
                    MessageKind::PlanApprovalResponse {
                        approve: false,
                        feedback: Some("smaller".into()),
                    },
                ),
            ],
        }),
        ToWorker::AskAnswer(AskAnswerWire {
            task_id: "alice-0123abcd".into(),
            ask_id: "a1".into(),
            answer: ApprovalAnswer::AllowOnce,
        }),
        ToWorker::AskAnswer(AskAnswerWire {
            task_id: "alice-0123abcd".into(),
            ask_id: "a2".into(),
            answer: ApprovalAnswer::Deny {
                message: Some("no".into()),
            },
        }),
    ];
    for m in all {
        assert_eq!(to_worker(m.clone()), m);
    }
}

#[test]
fn every_teammate_message_to_a_lead_round_trips() {
    let all = vec![
        ToLead::TeamSend(SentWire {
            task_id: "alice-0123abcd".into(),
            to: "lead".into(),
            message: "done".into(),
            summary: None,
            kind: MessageKind::ShutdownResponse { approve: true },
        }),
        ToLead::Idle(IdleWire {
            task_id: "alice-0123abcd".into(),
            through: 3,
            head: Some("89abcdef0123456789abcdef0123456789abcdef".into()),
            bundle: b"# v2 git bundle\n\0\x01binary".to_vec(),
        }),
        ToLead::Idle(IdleWire {
            task_id: "alice-0123abcd".into(),
            through: 0,
            head: None,
            bundle: Vec::new(),
        }),
        ToLead::AskRequest(AskWire {
            task_id: "alice-0123abcd".into(),
            ask_id: "a1".into(),
            request: request(),
        }),
    ];
    for m in all {
        assert_eq!(to_lead(m.clone()), m);
    }
}

#[test]
fn the_teammates_bundle_travels_raw() {
    let s = spawn();
    let size = s.run.bundle.len();
    let ractor::message::SerializedMessage::Cast { args, .. } =
        WorkerMsg::Remote(ToWorker::SpawnTeammate(Box::new(s)))
            .serialize()
            .unwrap()
    else {
        panic!("not a cast")
    };
    assert!(args.len() < size + 3_000, "{} bytes for {size}", args.len());
}

#[test]
fn an_answer_with_a_widened_or_unknown_shape_does_not_decode() {
    // An "answer" the wire does not know (a forged scope) is not a message at all.
    let json = br#"{"type":"ask_answer","task_id":"t","ask_id":"a","answer":{"answer":"allow_everything"}}"#;
    let mut args = (json.len() as u32).to_be_bytes().to_vec();
    args.extend_from_slice(json);
    let frame = ractor::message::SerializedMessage::Cast {
        variant: "crew.v2".into(),
        args,
        metadata: None,
    };
    assert!(WorkerMsg::deserialize(frame).is_err());
}
