//! Argument validation: a call's arguments must be a JSON object that satisfies the
//! tool's schema before the tool runs. Errors name the offending field so the model can
//! correct itself.

mod plain;

/// Whether a schema is checked without the general validator (see [`plain`]).
pub(crate) use plain::is_plain;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

use super::Tool;

/// Why a call's arguments were refused before the tool ran. Its text goes back to the
/// model as the call's result, so it names the offending fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    /// The arguments are not a JSON object (the kind they are instead).
    #[error("arguments must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// The tool's own schema does not compile (the compiler's message).
    #[error("the tool's own schema is invalid: {0}")]
    BadSchema(String),
    /// The arguments break the schema: the first few violations, each naming its field.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// Validates `input` against `schema`. The error names the first offending field.
#[cfg(test)]
pub(crate) fn validate(schema: &Value, input: &Value) -> Result<(), ArgumentsError> {
    object_input(input)?;
    compile(schema)?.check(input)
}

/// Each tool's compiled schema, so a call does not compile (and meta-validate) its tool's
/// schema again: that was most of a no-op call's cost. An entry is used only for the very
/// tool object it was compiled from (a replaced MCP tool of the same name is compiled
/// anew); a schema that does not compile is not kept, so every call reports it.
#[derive(Default)]
pub(crate) struct Validators {
    compiled: Mutex<HashMap<String, Compiled>>,
    /// Whether the tools' schemas were looked at for [`warm_up`].
    looked: AtomicBool,
}

/// Compiles a general schema once on a thread of its own: the first compile in a process builds
/// the validator of the meta-schema that every schema is checked against, 10 to 30 ms of
/// work that the first tool call would otherwise wait for. Called when an agent's first
/// model answer starts to arrive: the request is out, and its calls come at the end of
/// the answer. A call that comes sooner waits for the same work, never does it twice.
/// The thread runs at the lowest priority (on Linux a thread's own), so it takes only a
/// core nothing else wants.
pub(crate) fn warm_up() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let started = std::thread::Builder::new()
            .name("crew-schemas".into())
            .spawn(|| {
                let _ = rustix::process::setpriority_process(None, 19);
                drop(jsonschema::validator_for(
                    &serde_json::json!({"type": "object"}),
                ));
            });
        if let Err(e) = started {
            tracing::debug!("schemas are compiled when first used: {e}");
        }
    });
}

/// A tool's compiled schema, with the tool object it was compiled from.
type Compiled = (Weak<dyn Tool>, Arc<Checker>);

/// How a schema is checked: by walking it (a plain schema) or by the general validator.
enum Checker {
    Plain(Value),
    General(jsonschema::Validator),
}

impl Checker {
    fn check(&self, input: &Value) -> Result<(), ArgumentsError> {
        let violations = match self {
            Checker::Plain(schema) => plain::violations(schema, input),
            Checker::General(validator) => validator
                .iter_errors(input)
                .take(3)
                .map(|e| (e.instance_path.to_string(), e.to_string()))
                .collect(),
        };
        if violations.is_empty() {
            return Ok(());
        }
        let errors = violations
            .into_iter()
            .take(3)
            .map(|(path, message)| {
                if path.is_empty() {
                    message
                } else {
                    format!(
                        "argument `{}`: {message}",
                        path.trim_start_matches('/').replace('/', ".")
                    )
                }
            })
            .collect();
        Err(ArgumentsError::Invalid(errors))
    }
}

impl Validators {
    /// Whether this is the first look at the tools' schemas (for [`warm_up`]).
    pub(crate) fn first_look(&self) -> bool {
        !self.looked.load(Ordering::Relaxed) && !self.looked.swap(true, Ordering::Relaxed)
    }

    /// Validates `input` against `tool`'s schema, as [`validate`] does.
    pub(crate) fn validate(
        &self,
        tool: &Arc<dyn Tool>,
        input: &Value,
    ) -> Result<(), ArgumentsError> {
        object_input(input)?;
        let def = tool.definition();
        let cached = self
            .lock()
            .get(&def.name)
            .filter(|(of, _)| std::ptr::addr_eq(of.as_ptr(), Arc::as_ptr(tool)))
            .map(|(_, v)| v.clone());
        let validator = match cached {
            Some(v) => v,
            None => {
                let v = Arc::new(compile(&def.input_schema)?);
                self.lock()
                    .insert(def.name.clone(), (Arc::downgrade(tool), v.clone()));
                v
            }
        };
        validator.check(input)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Compiled>> {
        // A poisoned lock only means a panic mid-insert; an entry is inserted whole.
        self.compiled.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn object_input(input: &Value) -> Result<(), ArgumentsError> {
    if input.is_object() {
        Ok(())
    } else {
        Err(ArgumentsError::NotAnObject(kind(input)))
    }
}

fn compile(schema: &Value) -> Result<Checker, ArgumentsError> {
    if plain::is_plain(schema) {
        return Ok(Checker::Plain(schema.clone()));
    }
    jsonschema::validator_for(schema)
        .map(Checker::General)
        .map_err(|e| ArgumentsError::BadSchema(e.to_string()))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Builds an object schema from `(name, schema)` properties and the required names.
pub(crate) fn object(props: &[(&str, Value)], required: &[&str]) -> Value {
    let mut map = serde_json::Map::new();
    for (name, schema) in props {
        map.insert((*name).to_string(), schema.clone());
    }
    serde_json::json!({
        "type": "object",
        "properties": map,
        "required": required,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        object(
            &[
                ("path", json!({"type": "string"})),
                ("limit", json!({"type": "integer", "minimum": 1})),
            ],
            &["path"],
        )
    }

    #[test]
    fn accepts_valid_input() {
        assert!(validate(&schema(), &json!({"path": "a", "limit": 3})).is_ok());
    }

    #[test]
    fn names_missing_and_mistyped_fields() {
        let err = validate(&schema(), &json!({})).unwrap_err().to_string();
        assert!(err.contains("path"), "{err}");
        let err = validate(&schema(), &json!({"path": "a", "limit": "x"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`limit`"), "{err}");
        let err = validate(&schema(), &json!({"path": "a", "bogus": 1}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn rejects_non_objects() {
        assert!(
            validate(&schema(), &json!([1]))
                .unwrap_err()
                .to_string()
                .contains("an array")
        );
    }

    struct Fixed(super::super::Definition);

    #[async_trait::async_trait]
    impl Tool for Fixed {
        fn definition(&self) -> &super::super::Definition {
            &self.0
        }
        async fn run(
            &self,
            _: Value,
            _: super::super::ToolContext,
        ) -> Result<String, super::super::ToolError> {
            Ok(String::new())
        }
    }

    fn tool(schema: Value) -> Arc<dyn Tool> {
        Arc::new(Fixed(super::super::Definition {
            name: "t".into(),
            aliases: Vec::new(),
            description: String::new(),
            input_schema: schema,
            safety: super::super::Safety::ReadOnly,
            system: false,
            timeout: None,
            permission: None,
        }))
    }

    #[test]
    fn the_cache_gives_the_same_verdicts_and_compiles_a_replaced_tool_anew() {
        let cache = Validators::default();
        let first = tool(schema());
        for input in [
            json!({"path": "a"}),
            json!({"limit": 0}),
            json!([1]),
            json!({"path": 3}),
        ] {
            // Twice: once compiled, once from the cache; both as `validate` says.
            assert_eq!(cache.validate(&first, &input), validate(&schema(), &input));
            assert_eq!(cache.validate(&first, &input), validate(&schema(), &input));
        }
        // Same name, new tool object, new schema (an MCP server's refresh): its own.
        let strict = object(&[("n", json!({"type": "integer"}))], &["n"]);
        let second = tool(strict.clone());
        let input = json!({"path": "a"});
        assert!(cache.validate(&first, &input).is_ok());
        assert!(cache.validate(&second, &input).is_err());
        assert_eq!(cache.validate(&second, &input), validate(&strict, &input));
        // A schema that does not compile is reported on every call.
        let broken = tool(json!({"type": 12}));
        assert!(
            cache
                .validate(&broken, &json!({}))
                .unwrap_err()
                .to_string()
                .contains("own schema")
        );
        assert!(
            cache
                .validate(&broken, &json!({}))
                .unwrap_err()
                .to_string()
                .contains("own schema")
        );
    }
}
