//! The plain checker against the general validator: the same violations, in the same
//! order, with the same texts, on generated schemas and instances; every tool crew ships
//! is plain; and nothing malformed passes for plain.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{TYPES, is_plain, violations};

/// What the general validator says, as the plain checker says it.
fn general(schema: &Value, instance: &Value) -> Vec<(String, String)> {
    jsonschema::validator_for(schema)
        .expect("a plain schema compiles")
        .iter_errors(instance)
        .map(|e| (e.instance_path.to_string(), e.to_string()))
        .collect()
}

const NAMES: [&str; 5] = ["a", "b", "c/d", "e~f", "path"];

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(&NAMES[..]).prop_map(str::to_string)
}

fn type_keyword() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(&TYPES[..]).prop_map(|t| json!(t)),
        prop::sample::subsequence(&TYPES[..], 1..4)
            .prop_shuffle()
            .prop_map(|ts| json!(ts)),
    ]
}

/// Plain schemas, nested up to three levels.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = (
        prop::option::of(type_keyword()),
        prop::option::of(prop::collection::vec("[ab]{0,2}", 0..5)),
        prop::option::of(-3i64..4),
        prop::option::of(-3i64..4),
        prop::option::of(0u64..4),
        prop::option::of(0u64..4),
    )
        .prop_map(|(ty, options, min, max, min_len, max_len)| {
            let mut m = Map::new();
            m.insert("description".into(), json!("a field"));
            if let Some(t) = ty {
                m.insert("type".into(), t);
            }
            if let Some(o) = options {
                m.insert("enum".into(), json!(o));
            }
            if let Some(n) = min {
                m.insert("minimum".into(), json!(n));
            }
            if let Some(n) = max {
                m.insert("maximum".into(), json!(n));
            }
            if let Some(n) = min_len {
                m.insert("minLength".into(), json!(n));
            }
            if let Some(n) = max_len {
                m.insert("maxLength".into(), json!(n));
            }
            Value::Object(m)
        });
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map(name(), inner.clone(), 0..4),
                prop::sample::subsequence(&NAMES[..], 0..3),
                prop::option::of(any::<bool>()),
                prop::option::of(type_keyword()),
            )
                .prop_map(|(props, required, closed, ty)| {
                    let mut m = Map::new();
                    m.insert("properties".into(), json!(props));
                    m.insert("required".into(), json!(required));
                    if let Some(c) = closed {
                        m.insert("additionalProperties".into(), json!(c));
                    }
                    if let Some(t) = ty {
                        m.insert("type".into(), t);
                    }
                    Value::Object(m)
                }),
            (inner, prop::option::of(type_keyword())).prop_map(|(items, ty)| {
                let mut m = Map::new();
                m.insert("items".into(), items);
                if let Some(t) = ty {
                    m.insert("type".into(), t);
                }
                Value::Object(m)
            }),
        ]
    })
}

/// Instances of every kind, with the names the schemas use and one they do not.
fn instance() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..6).prop_map(|n| json!(n)),
        prop::sample::select(&[-2.5f64, -1.0, 0.5, 2.0, 3.5][..]).prop_map(|f| json!(f)),
        "[abé]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop_oneof![name(), Just("zz".to_string())], inner, 0..4)
                .prop_map(|m| json!(m)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn plain_schemas_are_checked_as_the_general_validator_checks_them(
        schema in schema(),
        instance in instance(),
    ) {
        prop_assert!(is_plain(&schema), "{schema}");
        prop_assert_eq!(violations(&schema, &instance), general(&schema, &instance));
    }
}

#[test]
fn every_tool_crew_ships_is_plain() {
    let tools = crate::tools::builtin_tools()
        .into_iter()
        .chain(crate::tools::orchestration_tools(&[(
            "general-purpose".into(),
            "Does anything.".into(),
        )]))
        .map(|t| t.definition().clone())
        .chain([
            crate::tools::skill::definition(),
            crate::tools::Tool::definition(&crate::tools::tool_search::ToolSearch::new(
                Default::default(),
            ))
            .clone(),
        ]);
    for def in tools {
        assert!(
            is_plain(&def.input_schema),
            "{}: {}",
            def.name,
            def.input_schema
        );
        assert!(
            jsonschema::validator_for(&def.input_schema).is_ok(),
            "{}",
            def.name
        );
    }
}

#[test]
fn nothing_malformed_or_beyond_the_keywords_passes_for_plain() {
    for schema in [
        json!(true),
        json!({"type": 12}),
        json!({"type": "strin"}),
        json!({"type": []}),
        json!({"type": ["string", "string"]}),
        json!({"required": ["a", "a"]}),
        json!({"required": "a"}),
        json!({"minimum": "1"}),
        json!({"minimum": 1.5}),
        json!({"minLength": -1}),
        json!({"enum": "a"}),
        json!({"enum": [1, 2]}),
        json!({"properties": {"a": {"type": "nope"}}}),
        json!({"properties": {"a": true}}),
        json!({"items": [{"type": "string"}]}),
        json!({"additionalProperties": {"type": "string"}}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
        json!({"$ref": "#/definitions/x"}),
        json!({"pattern": "^a"}),
        json!({"oneOf": [{"type": "string"}]}),
        json!({"description": 3}),
    ] {
        assert!(!is_plain(&schema), "{schema}");
    }
    // A malformed one is then the general validator's to report.
    let err = crate::tools::schema::validate(&json!({"type": 12}), &json!({})).unwrap_err();
    assert!(err.to_string().contains("schema is invalid"), "{err}");
}
