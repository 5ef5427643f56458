//! Argument validation: a call's arguments must be a JSON object that satisfies the
//! tool's schema before the tool runs. Errors name the offending field so the model can
//! correct itself.

use serde_json::Value;

/// Validates `input` against `schema`. The error names the first offending field.
pub fn validate(schema: &Value, input: &Value) -> Result<(), String> {
    if !input.is_object() {
        return Err(format!(
            "arguments must be a JSON object, got {}",
            kind(input)
        ));
    }
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the tool's own schema is invalid: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(input)
        .take(3)
        .map(|e| {
            let path = e.instance_path.to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!(
                    "argument `{}`: {e}",
                    path.trim_start_matches('/').replace('/', ".")
                )
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
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
pub fn object(props: &[(&str, Value)], required: &[&str]) -> Value {
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
        let err = validate(&schema(), &json!({})).unwrap_err();
        assert!(err.contains("path"), "{err}");
        let err = validate(&schema(), &json!({"path": "a", "limit": "x"})).unwrap_err();
        assert!(err.contains("`limit`"), "{err}");
        let err = validate(&schema(), &json!({"path": "a", "bogus": 1})).unwrap_err();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn rejects_non_objects() {
        assert!(
            validate(&schema(), &json!([1]))
                .unwrap_err()
                .contains("an array")
        );
    }
}
